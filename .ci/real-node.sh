#!/usr/bin/env bash
# Builds what a real one-node Kubernetes needs beside kube-apiserver and etcd
# (.ci/kube-tools.sh): kubelet, kube-controller-manager, kube-scheduler and
# kube-proxy from k8s.io/kubernetes, containerd + ctr + containerd-shim-runc-v2,
# runc, kube-router (its network policy controller is the NetworkPolicy
# enforcer, iptables and ipset), all from the Go module proxy, plus Debian's
# CNI plugins (bridge, host-local, loopback, portmap) linked into the same
# directory. Caches
# outside the repository, keyed by versions, and prints that directory on
# stdout; logs go to stderr. Idempotent: when every binary exists it returns
# at once. The cold build takes 15-25 minutes on 2 cores.
#
#   export SPORECTL_NODE_BIN_DIR="$(.ci/real-node.sh)"
set -euo pipefail

KUBE_VERSION=1.37.2
CONTAINERD_VERSION=2.4.2
RUNC_VERSION=1.5.3
# kube-router v2.1.0 has published security flaws (in its BGP and service
# proxy parts and its dependencies). It is acceptable here only because it
# is a test harness's enforcer that never ships: sporectl neither packages
# nor recommends it, and the tests run only its firewall, on a bridge of
# this machine's own.
KUBE_ROUTER_VERSION=2.1.0

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${SPORECTL_CACHE:-$HOME/.cache/sporectl}"
out="$cache/node-$KUBE_VERSION-containerd-$CONTAINERD_VERSION-runc-$RUNC_VERSION"

log() { echo "real-node: $*" >&2; }

# Debian packages: runc's seccomp support links libseccomp; the CNI plugins
# are Debian's; iptables for the bridge plugin, kube-proxy and kube-router;
# ipset for kube-router's policy chains.
need_pkgs=()
[[ -e /usr/include/seccomp.h ]] || need_pkgs+=(libseccomp-dev)
[[ -x /usr/lib/cni/bridge ]] || need_pkgs+=(containernetworking-plugins)
command -v iptables >/dev/null 2>&1 || need_pkgs+=(iptables)
command -v ipset >/dev/null 2>&1 || need_pkgs+=(ipset)
if ((${#need_pkgs[@]})); then
	command -v apt-get >/dev/null 2>&1 || { log "missing ${need_pkgs[*]} and no apt-get to install them"; exit 1; }
	sudo=""
	[[ "$(id -u)" == 0 ]] || sudo="sudo"
	log "installing ${need_pkgs[*]}"
	# A fresh machine has no package lists yet: update, then install.
	$sudo flock -w 1800 /tmp/sporectl-apt.lock apt-get update -q >&2
	$sudo env DEBIAN_FRONTEND=noninteractive flock -w 1800 /tmp/sporectl-apt.lock apt-get install -y --no-install-recommends "${need_pkgs[@]}" >&2
fi

# Stamp the version the way Kubernetes' own build does, so the node reports
# v$KUBE_VERSION (not v0.0.0-master) and no component sees a skew.
kube_ldflags="-s -w"
for kv in "gitVersion=v$KUBE_VERSION" "gitMajor=${KUBE_VERSION%%.*}" "gitMinor=$(cut -d. -f2 <<<"$KUBE_VERSION")" "gitTreeState=clean"; do
	kube_ldflags+=" -X k8s.io/component-base/version.$kv"
done
ctrd_ldflags="-s -w -X github.com/containerd/containerd/v2/version.Version=v$CONTAINERD_VERSION"
# The graph drivers the node never uses are left out (no headers for them here).
ctrd_tags="no_btrfs no_devmapper no_zfs no_aufs"

# build DIR PKG NAME CGO TAGS LDFLAGS: builds into a temp name and renames, so
# a killed build never leaves a truncated binary that looks finished.
build() {
	local dir="$1" pkg="$2" name="$3" cgo="$4" tags="$5" ldflags="$6"
	if [[ -x "$out/$name" ]]; then
		return 0
	fi
	log "building $name (this takes minutes the first time)"
	local start=$SECONDS
	(cd "$here/kubetools/$dir" && CGO_ENABLED="$cgo" go build -trimpath -tags "$tags" -ldflags="$ldflags" -o "$out/.$name.tmp" "$pkg") >&2
	mv -f "$out/.$name.tmp" "$out/$name"
	log "built $name in $((SECONDS - start))s"
}

mkdir -p "$out"
# runc first: it is small and its own module pins its dependencies.
if [[ ! -x "$out/runc" ]]; then
	log "building runc"
	start=$SECONDS
	tmp="$(mktemp -d)"
	GOBIN="$tmp" CGO_ENABLED=1 go install -trimpath -tags seccomp \
		-ldflags="-s -w -X main.version=$RUNC_VERSION" "github.com/opencontainers/runc@v$RUNC_VERSION" >&2
	mv -f "$tmp/runc" "$out/runc"
	rmdir "$tmp"
	log "built runc in $((SECONDS - start))s"
fi
build containerd github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 containerd-shim-runc-v2 0 "" "$ctrd_ldflags"
build containerd github.com/containerd/containerd/v2/cmd/ctr ctr 0 "" "$ctrd_ldflags"
build containerd github.com/containerd/containerd/v2/cmd/containerd containerd 1 "$ctrd_tags" "$ctrd_ldflags"
for c in kube-scheduler kube-controller-manager kubelet kube-proxy; do
	build node "k8s.io/kubernetes/cmd/$c" "$c" 0 "" "$kube_ldflags"
done
# kube-router is cached in a directory of its own, keyed by its version,
# and linked into the node's: a new version is built without rebuilding the
# node. Its go.mod has no replace directives, so go install builds it as
# released. (kube-network-policies, the enforcer before it, needs nftables'
# queue expression, which these machines' kernel lacks.)
kr="$cache/kube-router-$KUBE_ROUTER_VERSION"
if [[ ! -x "$kr/kube-router" ]]; then
	log "building kube-router $KUBE_ROUTER_VERSION (this takes minutes the first time)"
	start=$SECONDS
	mkdir -p "$kr"
	tmp="$(mktemp -d)"
	GOBIN="$tmp" CGO_ENABLED=0 go install -trimpath -ldflags="-s -w" "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router@v$KUBE_ROUTER_VERSION" >&2
	mv -f "$tmp/kube-router" "$kr/kube-router"
	rmdir "$tmp"
	log "built kube-router in $((SECONDS - start))s"
fi
ln -sfn "$kr/kube-router" "$out/kube-router"
for p in bridge host-local loopback portmap; do
	ln -sfn "/usr/lib/cni/$p" "$out/$p"
done
printf 'kube %s\ncontainerd %s\nrunc %s\nkube-router %s\n' "$KUBE_VERSION" "$CONTAINERD_VERSION" "$RUNC_VERSION" "$KUBE_ROUTER_VERSION" >"$out/VERSIONS"
echo "$out"
