#!/usr/bin/env bash
# Makes sure PostgreSQL server binaries (initdb, postgres, pg_ctl) are
# installed and prints the directory holding them on stdout. Everything
# else goes to stderr, so callers can do:
#
#   export SPORECTL_PG_BIN=$(bash .ci/postgres.sh)
#
# Order: $SPORECTL_PG_BIN if it holds initdb, then initdb on PATH, then the
# newest /usr/lib/postgresql/*/bin. Only when none is found does it install
# the Debian package (apt-get), which needs root. It never starts a server:
# the tests' harness (state/pgstore/pgtest) does, as an unprivileged user.
set -euo pipefail

find_bin() {
	if [[ -n "${SPORECTL_PG_BIN:-}" && -x "${SPORECTL_PG_BIN}/initdb" ]]; then
		printf '%s\n' "${SPORECTL_PG_BIN}"
		return 0
	fi
	local p
	if p="$(command -v initdb 2>/dev/null)"; then
		p="$(readlink -f "${p}")"
		printf '%s\n' "$(dirname "${p}")"
		return 0
	fi
	local d
	d="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)"
	if [[ -n "${d}" && -x "${d}/initdb" ]]; then
		printf '%s\n' "${d}"
		return 0
	fi
	return 1
}

if bin="$(find_bin)"; then
	printf '%s\n' "${bin}"
	exit 0
fi

command -v apt-get >/dev/null 2>&1 || { echo "postgres.sh: no initdb found and no apt-get to install it" >&2; exit 1; }
sudo=""
if [[ "$(id -u)" -ne 0 ]]; then
	command -v sudo >/dev/null 2>&1 || { echo "postgres.sh: installing PostgreSQL needs root" >&2; exit 1; }
	sudo="sudo"
fi
echo "postgres.sh: installing the postgresql package" >&2
${sudo} flock -w 1800 /tmp/sporectl-apt.lock apt-get update >&2
DEBIAN_FRONTEND=noninteractive ${sudo} flock -w 1800 /tmp/sporectl-apt.lock apt-get install -y --no-install-recommends postgresql >&2

bin="$(find_bin)" || { echo "postgres.sh: postgresql installed but no initdb found" >&2; exit 1; }
"${bin}/initdb" --version >&2
printf '%s\n' "${bin}"
