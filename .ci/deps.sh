#!/usr/bin/env bash
# Prints `export NAME=VALUE` lines for the real components the tests run.
# Each installer is idempotent and caches outside the repo. An installer
# that is missing (not written yet) or fails is fatal when CI is set.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

run() { # run NAME SCRIPT
	local name="$1" script="$2" out
	if [[ ! -f "$here/$script" ]]; then
		echo "deps: $script is missing" >&2
		if [[ -n "${CI:-}" ]]; then exit 1; fi
		return 0
	fi
	if out="$(bash "$here/$script")"; then
		printf 'export %s=%q\n' "$name" "$out"
	else
		echo "deps: $script failed" >&2
		if [[ -n "${CI:-}" ]]; then exit 1; fi
	fi
}

run SPORECTL_PG_BIN postgres.sh
run SPORECTL_CLAUDE_BIN claude-code.sh
run SPORECTL_KUBE_BIN_DIR kube-tools.sh
run SPORECTL_NODE_BIN_DIR real-node.sh
run SPORECTL_CHROMIUM chromium.sh
run SPORECTL_METRICS_SERVER_BIN_DIR metrics-server.sh

# The spore image's inputs (Debian's userland, Claude Code's npm tarballs,
# the layer cache): images.sh prints NAME=VALUE lines, exported as they are,
# for the real-node tests that build the images (kube/images/imagestest).
if out="$(bash "$here/images.sh")"; then
	sed 's/^/export /' <<<"$out"
else
	echo "deps: images.sh failed" >&2
	if [[ -n "${CI:-}" ]]; then exit 1; fi
fi
