#!/usr/bin/env bash
# The main job on the embedded default (a directory store, local runtime),
# in a temporary directory that is removed afterwards.
set -euo pipefail
bin="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
export SPORECTL_STORE="$dir/store"
step() { printf '\n$ sporectl %s\n' "$*"; "$bin" "$@"; }
step init --runtime local --agent echo
step create arch --rank arch --colony hq
step create lab-myco --rank colony --colony lab
step create worker-1 --colony lab --swarm build --role coder --wake
step create worker-2 --colony lab --swarm build --role tester --memory 1Gi
step list -o wide
step status
step events worker-1
step delete worker-2
step status -o json
step check
