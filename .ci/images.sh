#!/usr/bin/env bash
# Makes the spore image's inputs that come from Debian and npm, in a cache
# outside the repository, and prints them on stdout as shell assignments
# for `make images` (everything else goes to stderr):
#
#   eval "$(bash .ci/images.sh)"
#   # SPORECTL_IMAGE_ROOTFS, SPORECTL_IMAGE_CLAUDE_CODE,
#   # SPORECTL_IMAGE_CLAUDE_CODE_NATIVE, SPORECTL_IMAGE_CLAUDE_CODE_VERSION,
#   # SPORECTL_IMAGE_LAYERS (the layer cache of cmd/mkimages)
#
# - the root filesystem: Debian bookworm from Debian's own mirror by
#   mmdebstrap (variant minbase plus the packages below, no recommends,
#   no docs, man pages or locales), as a tar. It is cached under a key of
#   everything that makes it (suite, mirrors, packages, options, this
#   recipe's version); Debian's archive moves on (point releases, security
#   updates), so a cold build takes what the mirror serves that day, and
#   a warm one reuses the cached tar byte for byte. Delete the cache to
#   take newer packages.
# - Claude Code: the npm tarballs of @anthropic-ai/claude-code and of its
#   native package, at the version .ci/claude-code.sh pins (npm pack; no
#   install script runs: cmd/mkimages places the native binary as it
#   would).
#
# Idempotent; installs mmdebstrap with apt-get when it is missing (root).
# Mirrors: SPORECTL_DEBIAN_MIRROR, SPORECTL_DEBIAN_SECURITY_MIRROR.
set -euo pipefail
cd "$(dirname "$0")/.."

recipe=1 # raise when the rootfs recipe below changes in a way the key does not see
cache="${SPORECTL_CACHE:-${HOME}/.cache/sporectl}/images"
suite=bookworm
variant=minbase
mirror="${SPORECTL_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
security="${SPORECTL_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"
packages=(nodejs git ca-certificates openssh-client ripgrep)
arch="$(dpkg --print-architecture)"
case "${arch}" in
amd64) npm_arch=x64 ;;
arm64) npm_arch=arm64 ;;
*) echo "images.sh: no Claude Code build for architecture ${arch}" >&2; exit 1 ;;
esac
version="$(sed -n 's/^version=//p' .ci/claude-code.sh)"
[[ -n "${version}" ]] || { echo "images.sh: no version= line in .ci/claude-code.sh" >&2; exit 1; }

sources=(
	"deb ${mirror} ${suite} main"
	"deb ${mirror} ${suite}-updates main"
	"deb ${security} ${suite}-security main"
)
# Files that would carry the build machine into the image (its hostname
# and resolver: the runtime provides both) or the build's leftovers.
hook='rm -f "$1/etc/hostname" "$1/etc/resolv.conf" "$1"/etc/*- "$1"/var/cache/debconf/*-old "$1"/var/lib/dpkg/*-old "$1/var/cache/ldconfig/aux-cache"; rm -rf "$1"/var/log/apt/* "$1"/var/lib/apt/lists/*'
opts=(
	--variant="${variant}" --architectures="${arch}"
	--include="$(IFS=,; echo "${packages[*]}")"
	--aptopt='APT::Install-Recommends "false"'
	--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*'
	--dpkgopt='path-exclude=/usr/share/info/*' --dpkgopt='path-exclude=/usr/share/doc/*'
	--dpkgopt='path-include=/usr/share/doc/*/copyright'
	--skip=output/dev --customize-hook="${hook}"
)
key="$(printf '%s\n' "${recipe}" "${suite}" "${sources[@]}" "${opts[@]}" | sha256sum | cut -c1-16)"
rootfs="${cache}/rootfs-${suite}-${arch}-${key}.tar"
npmdir="${cache}/claude-code-${version}"
wrapper="${npmdir}/anthropic-ai-claude-code-${version}.tgz"
native="${npmdir}/anthropic-ai-claude-code-linux-${npm_arch}-${version}.tgz"

mkdir -p "${cache}"
# Two builds sharing a cache make each input once: the second waits, then finds it.
exec 9>"${cache}/.images.lock"
flock 9

if [[ ! -f "${rootfs}" ]]; then
	if ! command -v mmdebstrap >/dev/null 2>&1; then
		echo "images.sh: installing mmdebstrap" >&2
		flock -w 1800 /tmp/sporectl-apt.lock apt-get install -y -q mmdebstrap >&2 || { flock -w 1800 /tmp/sporectl-apt.lock apt-get update -q >&2 && flock -w 1800 /tmp/sporectl-apt.lock apt-get install -y -q mmdebstrap >&2; }
	fi
	echo "images.sh: making the ${suite} root filesystem (${packages[*]}) into ${rootfs}" >&2
	tmp="$(mktemp "${cache}/.rootfs.XXXXXX.tar")"
	trap 'rm -f "${tmp}"' EXIT
	# mmdebstrap clamps every mtime to SOURCE_DATE_EPOCH; cmd/mkimages sets
	# them to the image's epoch anyway.
	SOURCE_DATE_EPOCH=0 mmdebstrap --quiet "${opts[@]}" "${suite}" "${tmp}" "${sources[@]}" >&2
	chmod 644 "${tmp}"
	mv "${tmp}" "${rootfs}"
	trap - EXIT
fi

if [[ ! -f "${wrapper}" || ! -f "${native}" ]]; then
	command -v npm >/dev/null 2>&1 || { echo "images.sh: npm not found (flock -w 1800 /tmp/sporectl-apt.lock apt-get install npm)" >&2; exit 1; }
	echo "images.sh: fetching Claude Code ${version} from npm into ${npmdir}" >&2
	tmpd="$(mktemp -d "${cache}/.npm.XXXXXX")"
	trap 'rm -rf "${tmpd}"' EXIT
	(cd "${tmpd}" && npm pack --silent "@anthropic-ai/claude-code@${version}" "@anthropic-ai/claude-code-linux-${npm_arch}@${version}" >&2)
	[[ -f "${tmpd}/$(basename "${wrapper}")" && -f "${tmpd}/$(basename "${native}")" ]] ||
		{ echo "images.sh: npm pack made $(ls "${tmpd}"), not the two Claude Code tarballs" >&2; exit 1; }
	chmod 755 "${tmpd}"
	rm -rf "${npmdir}"
	mv "${tmpd}" "${npmdir}"
	trap - EXIT
fi

printf 'SPORECTL_IMAGE_ROOTFS=%q\n' "${rootfs}"
printf 'SPORECTL_IMAGE_CLAUDE_CODE=%q\n' "${wrapper}"
printf 'SPORECTL_IMAGE_CLAUDE_CODE_NATIVE=%q\n' "${native}"
printf 'SPORECTL_IMAGE_CLAUDE_CODE_VERSION=%q\n' "${version}"
printf 'SPORECTL_IMAGE_LAYERS=%q\n' "${cache}/layers"
