#!/usr/bin/env bash
# The main job on the embedded default — a directory store and the local
# runtime, with the built-in echo agent (no API key needed) — in a
# temporary directory that is removed afterwards, bridges included.
set -euo pipefail
bin="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
dir="$(mktemp -d)"
export SPORECTL_STORE="$dir/store"
cleanup() {
	"$bin" sleep worker-1 worker-2 >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT
step() { printf '\n$ sporectl %s\n' "$*"; "$bin" "$@"; }
step init --runtime local --agent echo
step create arch --rank arch --colony hq
step create lab-myco --rank colony --colony lab
step create worker-1 --colony lab --swarm build --role coder --wake
step create worker-2 --colony lab --swarm build --role tester --memory 1Gi
step list -o wide
step status
step wake worker-2
step status worker-1 worker-2 -o json
step sleep worker-1
step events worker-1
step delete worker-2 --purge-home
step status || echo "(exit $?: a spore needs attention)"
step check
