#!/usr/bin/env bash
# Builds the Kubernetes test binaries (etcd, kube-apiserver, kubectl) from
# the Go module proxy into a cache outside the repository, keyed by version,
# and prints that directory on stdout. Logs go to stderr. Idempotent: when
# every binary exists it returns at once.
#
#   export SPORECTL_KUBE_BIN_DIR="$(.ci/kube-tools.sh)"
set -euo pipefail

KUBE_VERSION=1.37.2
ETCD_VERSION=3.6.16

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${SPORECTL_CACHE:-$HOME/.cache/sporectl}"
out="$cache/kube-$KUBE_VERSION"

log() { echo "kube-tools: $*" >&2; }

# Stamp the version the way Kubernetes' own build does, so the server
# reports v$KUBE_VERSION instead of a placeholder and kubectl sees no skew.
kube_ldflags="-s -w"
for kv in "gitVersion=v$KUBE_VERSION" "gitMajor=${KUBE_VERSION%%.*}" "gitMinor=$(cut -d. -f2 <<<"$KUBE_VERSION")" "gitTreeState=clean"; do
	kube_ldflags+=" -X k8s.io/component-base/version.$kv"
done

# build DIR PKG NAME [LDFLAGS]: builds into a temp name and renames, so a killed
# build never leaves a truncated binary that looks finished.
build() {
	local dir="$1" pkg="$2" name="$3" ldflags="${4:--s -w}"
	if [[ -x "$out/$name" ]]; then
		return 0
	fi
	log "building $name (this takes minutes the first time)"
	local start=$SECONDS
	(cd "$here/kubetools/$dir" && CGO_ENABLED=0 go build -trimpath -ldflags="$ldflags" -o "$out/.$name.tmp" "$pkg") >&2
	mv -f "$out/.$name.tmp" "$out/$name"
	log "built $name in $((SECONDS - start))s"
}

mkdir -p "$out"
build etcd . etcd
build apiserver k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver "$kube_ldflags"
build apiserver k8s.io/kubernetes/cmd/kubectl kubectl "$kube_ldflags"
printf 'etcd %s\nkube %s\n' "$ETCD_VERSION" "$KUBE_VERSION" >"$out/VERSIONS"
echo "$out"
