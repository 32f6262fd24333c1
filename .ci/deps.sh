#!/usr/bin/env bash
# Prints `export NAME=VALUE` lines for the real components the tests run.
# Each installer is idempotent and caches outside the repo. An installer
# that is missing (not written yet) or fails is fatal when CI is set.
#
# The installers run at once: on a fresh machine most of their time is
# downloading (Debian's packages, Go modules, npm) and linking, which
# overlap well on 2 cores; they take turns at apt-get (a lock in /tmp),
# and Go's module and build caches lock themselves. Warm, each returns at
# once. Their logs go to stderr as they come; the exports are printed in
# a fixed order once all are done.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# NAME SCRIPT: the script prints one value, exported as NAME; NAME "-":
# the script prints NAME=VALUE lines, each exported as it is.
installers=(
	SPORECTL_PG_BIN postgres.sh
	SPORECTL_CLAUDE_BIN claude-code.sh
	SPORECTL_KUBE_BIN_DIR kube-tools.sh
	SPORECTL_NODE_BIN_DIR real-node.sh
	SPORECTL_CHROMIUM chromium.sh
	SPORECTL_METRICS_SERVER_BIN_DIR metrics-server.sh
	SPORECTL_PROMTOOL promtool.sh
	# The spore image's inputs (Debian's userland, Claude Code's npm
	# tarballs, the layer cache) for the real-node tests that build the
	# images (kube/images/imagestest).
	- images.sh
)

began=$SECONDS
pids=()
for ((i = 0; i < ${#installers[@]}; i += 2)); do
	script="${installers[i + 1]}"
	if [[ ! -f "$here/$script" ]]; then
		echo "deps: $script is missing" >&2
		[[ -z "${CI:-}" ]] || exit 1
		pids+=("")
		continue
	fi
	# Each says how long it took, so a CI log shows where a cold run's
	# time went (README gives the cold and warm figures).
	(
		start=$SECONDS
		rc=0
		bash "$here/$script" >"$tmp/$i.out" || rc=$?
		echo "deps: $script took $((SECONDS - start))s" >&2
		exit "$rc"
	) &
	pids+=("$!")
done

failed=0
for ((i = 0; i < ${#installers[@]}; i += 2)); do
	name="${installers[i]}" script="${installers[i + 1]}" pid="${pids[i / 2]}"
	[[ -n "$pid" ]] || continue
	if ! wait "$pid"; then
		echo "deps: $script failed" >&2
		failed=1
		continue
	fi
	if [[ "$name" == "-" ]]; then
		sed 's/^/export /' "$tmp/$i.out"
	else
		printf 'export %s=%q\n' "$name" "$(cat "$tmp/$i.out")"
	fi
done
echo "deps: all done in $((SECONDS - began))s" >&2
if ((failed)) && [[ -n "${CI:-}" ]]; then
	exit 1
fi
