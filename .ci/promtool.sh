#!/usr/bin/env bash
# Makes sure Debian's `promtool` (from the `prometheus` package) is at hand
# and prints its absolute path on stdout; logs go to stderr:
#
#   export SPORECTL_PROMTOOL="$(bash .ci/promtool.sh)"
#
# The metrics tests (reconcile/metrics, cmd/cli) run `promtool check
# metrics` on serve's /metrics answer and on reconcile's --metrics-file.
# The package is downloaded and unpacked (apt-get download, dpkg -x) into a
# cache outside the repository, keyed by its version, never installed: an
# installed prometheus would start a server. Idempotent: once unpacked it
# only prints the path. Order: $SPORECTL_PROMTOOL if it is executable,
# then the cache.
set -euo pipefail

if [[ -n "${SPORECTL_PROMTOOL:-}" && -x "${SPORECTL_PROMTOOL}" ]]; then
	printf '%s\n' "${SPORECTL_PROMTOOL}"
	exit 0
fi

cache="${SPORECTL_CACHE:-$HOME/.cache/sporectl}"
log() { echo "promtool.sh: $*" >&2; }
command -v apt-get >/dev/null 2>&1 || { log "no apt-get to fetch Debian's prometheus package"; exit 1; }

candidate() { apt-cache policy prometheus 2>/dev/null | awk '/Candidate:/ {print $2}'; }
ver="$(candidate)"
if [[ -z "$ver" || "$ver" == "(none)" ]]; then
	log "updating the package lists"
	flock -w 1800 /tmp/sporectl-apt.lock apt-get update -q >&2
	ver="$(candidate)"
fi
[[ -n "$ver" && "$ver" != "(none)" ]] || { log "Debian has no prometheus package here"; exit 1; }

# paths: where version $ver is unpacked, and its promtool.
paths() {
	out="$cache/prometheus-${ver//[^A-Za-z0-9.+-]/_}"
	bin="$out/usr/bin/promtool"
}
download() { (cd "$tmp" && flock -w 1800 /tmp/sporectl-apt.lock apt-get download -q "prometheus=$ver" >&2); }
paths
if [[ ! -x "$bin" ]]; then
	log "fetching prometheus $ver (promtool only; nothing is installed)"
	mkdir -p "$cache"
	tmp="$(mktemp -d "$cache/.prometheus.XXXXXX")"
	trap 'rm -rf "$tmp"' EXIT
	chmod 755 "$tmp" # apt's download user writes there
	# apt-get download writes into the working directory. Another
	# installer may update the package lists between our reading the
	# candidate and the download, and the version read may be gone: then
	# read the candidate again and fetch that.
	if ! download; then
		ver="$(candidate)"
		log "retrying with prometheus $ver (the package lists changed)"
		paths
		download
	fi
	dpkg -x "$tmp"/prometheus_*.deb "$tmp/root"
	# Renamed whole: a killed unpack never leaves a directory that looks
	# finished.
	rm -rf "$out"
	mv "$tmp/root" "$out"
fi
"$bin" --version >&2 || { log "$bin --version failed"; exit 1; }
printf '%s\n' "$bin"
