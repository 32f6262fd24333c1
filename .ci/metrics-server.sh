#!/usr/bin/env bash
# Builds metrics-server (kubernetes-sigs/metrics-server) from the Go module
# proxy into a cache outside the repository, keyed by version, and prints
# that directory on stdout; logs go to stderr. Idempotent: when the binary
# exists it returns at once. The real-node harness runs it as a host
# process against the node's kubelet (kube/kubetest/node_metrics.go), so
# `mycologist hosts` reads a real metrics.k8s.io API. Its module pins its
# own dependencies (no replace directives), so `go install pkg@version`
# builds exactly the release. The cold build (module downloads included)
# took 10 minutes on 2 busy cores; warm it returns at once.
#
#   export SPORECTL_METRICS_SERVER_BIN_DIR="$(.ci/metrics-server.sh)"
set -euo pipefail

METRICS_SERVER_VERSION=0.8.0

cache="${SPORECTL_CACHE:-$HOME/.cache/sporectl}"
out="$cache/metrics-server-$METRICS_SERVER_VERSION"

log() { echo "metrics-server: $*" >&2; }

if [[ ! -x "$out/metrics-server" ]]; then
	log "building metrics-server v$METRICS_SERVER_VERSION (this takes minutes the first time)"
	start=$SECONDS
	mkdir -p "$out"
	# Into a temporary GOBIN, then renamed: a killed build never leaves a
	# truncated binary that looks finished.
	tmp="$(mktemp -d)"
	trap 'rm -rf "$tmp"' EXIT
	GOBIN="$tmp" CGO_ENABLED=0 go install -trimpath \
		-ldflags="-s -w -X k8s.io/client-go/pkg/version.gitVersion=v$METRICS_SERVER_VERSION" \
		"sigs.k8s.io/metrics-server/cmd/metrics-server@v$METRICS_SERVER_VERSION" >&2
	mv -f "$tmp/metrics-server" "$out/metrics-server"
	printf 'metrics-server %s\n' "$METRICS_SERVER_VERSION" >"$out/VERSIONS"
	log "built metrics-server in $((SECONDS - start))s"
fi
echo "$out"
