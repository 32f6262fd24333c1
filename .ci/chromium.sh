#!/usr/bin/env bash
# Makes sure Debian's `chromium` package is installed and prints the
# absolute path of the chromium executable on stdout. Everything else goes
# to stderr, so callers can do:
#
#   export SPORECTL_CHROMIUM=$(bash .ci/chromium.sh)
#
# The browser test of the page (mycelia/ui TestPageInABrowser) drives it
# headless through chromedp. Order: $SPORECTL_CHROMIUM if it is
# executable, then `chromium` on PATH. Only when neither is found does it
# install the Debian package with apt-get, which needs root. Debian's
# package only: it never downloads a browser build from anywhere else.
# Idempotent: once installed it only prints the path.
set -euo pipefail

find_bin() {
	if [[ -n "${SPORECTL_CHROMIUM:-}" && -x "${SPORECTL_CHROMIUM}" ]]; then
		printf '%s\n' "${SPORECTL_CHROMIUM}"
		return 0
	fi
	local p
	if p="$(command -v chromium 2>/dev/null)"; then
		printf '%s\n' "${p}"
		return 0
	fi
	return 1
}

if bin="$(find_bin)"; then
	printf '%s\n' "${bin}"
	exit 0
fi

command -v apt-get >/dev/null 2>&1 || { echo "chromium.sh: no chromium found and no apt-get to install it" >&2; exit 1; }
sudo=""
if [[ "$(id -u)" -ne 0 ]]; then
	command -v sudo >/dev/null 2>&1 || { echo "chromium.sh: installing chromium needs root" >&2; exit 1; }
	sudo="sudo"
fi
echo "chromium.sh: installing the chromium package" >&2
${sudo} flock -w 1800 /tmp/sporectl-apt.lock apt-get update -q >&2
DEBIAN_FRONTEND=noninteractive ${sudo} flock -w 1800 /tmp/sporectl-apt.lock apt-get install -y -q chromium >&2

bin="$(find_bin)" || { echo "chromium.sh: chromium installed but not found on PATH" >&2; exit 1; }
"${bin}" --version >&2 || { echo "chromium.sh: ${bin} --version failed" >&2; exit 1; }
printf '%s\n' "${bin}"
