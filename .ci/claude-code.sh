#!/usr/bin/env bash
# Installs the pinned Claude Code CLI into a cache outside the repository and
# prints the absolute path of its `claude` binary on stdout. Everything else
# goes to stderr, so callers can do:
#
#   export SPORECTL_CLAUDE_BIN=$(bash .ci/claude-code.sh)
#
# Idempotent: when the pinned version is already installed it only prints the
# path. The install is made in a temporary directory and renamed into place,
# so an interrupted run never leaves a half-installed cache behind.
set -euo pipefail

version=2.1.328
pkg="@anthropic-ai/claude-code@${version}"
cache="${SPORECTL_CACHE:-${HOME}/.cache/sporectl}"
dest="${cache}/claude-code-${version}"
bin="${dest}/node_modules/.bin/claude"

if [[ -x "${bin}" ]] && [[ -f "${dest}/.complete" ]]; then
	printf '%s\n' "$(cd "$(dirname "${bin}")" && pwd)/claude"
	exit 0
fi

command -v npm >/dev/null 2>&1 || { echo "claude-code.sh: npm not found" >&2; exit 1; }

mkdir -p "${cache}"
# Two CI jobs sharing a cache install once: the second waits, then finds it.
if command -v flock >/dev/null 2>&1; then
	exec 9>"${cache}/.claude-code-${version}.lock"
	flock 9
	if [[ -x "${bin}" ]] && [[ -f "${dest}/.complete" ]]; then
		printf '%s\n' "$(cd "$(dirname "${bin}")" && pwd)/claude"
		exit 0
	fi
fi
tmp="$(mktemp -d "${cache}/.claude-code-${version}.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT

echo "claude-code.sh: installing ${pkg} into ${dest}" >&2
(
	cd "${tmp}"
	printf '{"name":"sporectl-claude-code","private":true}\n' >package.json
	npm install --no-audit --no-fund --loglevel=error --save-exact "${pkg}" >&2
)
[[ -x "${tmp}/node_modules/.bin/claude" ]] || { echo "claude-code.sh: ${pkg} installed no claude binary" >&2; exit 1; }
"${tmp}/node_modules/.bin/claude" --version >&2
chmod 755 "${tmp}"
touch "${tmp}/.complete"

rm -rf "${dest}"
mv "${tmp}" "${dest}"
trap - EXIT
printf '%s\n' "$(cd "$(dirname "${bin}")" && pwd)/claude"
