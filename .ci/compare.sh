#!/usr/bin/env bash
# compare.sh — whole sporectl processes timed on stores of 1,000 and 10,000
# spores, side by side, with the ratio 10k/1k of each (`make compare`).
#
# Builds bin/sporectl's binary and a hello-world Go binary (the floor of a
# process start), makes two directory stores with `create ID…` (one
# command per store), then runs each command RUNS times (default 7) on
# each store, alternating the stores so a busy machine slows both alike,
# and prints the median wall time of each and the ratio. The commands:
#
#   create ID      one more spore (deleted again after each run)
#   prompt ID T    to an asleep spore: refused, exit 10 (Asleep), nothing
#                  queued — the store is opened and the spore read
#   status ID      one spore, observed through the local runtime
#   status -o json every spore
#   reconcile      a pass with nothing to do (every spore asleep)
#   version        against the hello-world binary
#
# The stores are directories. Prints one table on stdout; the machine's
# load is in its first line (on a shared machine, compare ratios, not
# milliseconds). kubectl against the same API server is not timed here
# yet (docs/performance.md, "make compare").
set -euo pipefail
runs=${RUNS:-7}
sizes=(1000 10000)
top=$(git rev-parse --show-toplevel)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

go build -o "$work/sporectl" "$top/cmd/sporectl"
mkdir -p "$work/hello"
cat >"$work/hello/main.go" <<'GO'
package main

import "fmt"

func main() { fmt.Println("hello") }
GO
(cd "$work/hello" && go mod init hello >/dev/null 2>&1 && go build -o "$work/hello-bin" .)

s="$work/sporectl"
for n in "${sizes[@]}"; do
	st="$work/store-$n"
	"$s" --store "$st" init --runtime local --agent echo --no-operator >/dev/null
	ids=()
	for ((i = 0; i < n; i++)); do ids+=("$(printf 'spore-%05d' "$i")"); done
	start=$(date +%s.%N)
	"$s" --store "$st" create "${ids[@]}" >/dev/null
	end=$(date +%s.%N)
	build[$n]=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
done

# ms CMD…: the wall time of one run of CMD in milliseconds (its exit code
# is not judged: prompt's refusal is the point).
ms() {
	local a b
	a=$(date +%s%N)
	"$@" >/dev/null 2>&1 || true
	b=$(date +%s%N)
	echo $(((b - a) / 1000))
}

median() { sort -n | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.1f", m / 1000 }'; }

names=(create prompt "status ID" "status -o json" reconcile version)
run_one() { # run_one NAME STORE
	case $1 in
	create) ms "$s" --store "$2" create extra-spore; "$s" --store "$2" delete extra-spore >/dev/null 2>&1 ;;
	prompt) ms "$s" --store "$2" prompt spore-00007 "hello" ;;
	"status ID") ms "$s" --store "$2" status spore-00007 ;;
	"status -o json") ms "$s" --store "$2" status -o json ;;
	reconcile) ms "$s" --store "$2" reconcile ;;
	version) ms "$s" version ;;
	esac
}

declare -A t
for name in "${names[@]}"; do
	for ((r = 0; r < runs; r++)); do
		for n in "${sizes[@]}"; do
			t[$name,$n]+="$(run_one "$name" "$work/store-$n" | tail -1) "
		done
		t[hello]+="$(ms "$work/hello-bin") "
	done
done

printf '# sporectl, whole processes, median of %d runs (ms); directory store; %s, %s cores, load %s\n' \
	"$runs" "$(date -u +%FT%TZ)" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '# building each store with one create ID…: 1,000 in %ss, 10,000 in %ss\n' "${build[1000]}" "${build[10000]}"
printf '%-16s %10s %10s %8s\n' command 1k 10k 10k/1k
for name in "${names[@]}"; do
	a=$(tr ' ' '\n' <<<"${t[$name,1000]}" | grep . | median)
	b=$(tr ' ' '\n' <<<"${t[$name,10000]}" | grep . | median)
	printf '%-16s %10s %10s %8s\n' "$name" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", b / a }')"
done
h=$(tr ' ' '\n' <<<"${t[hello]}" | grep . | median)
v=$(tr ' ' '\n' <<<"${t[version,1000]}" | grep . | median)
printf '%-16s %10s %10s %8s\n' "hello-world" "$h" "" ""
printf '# version / hello-world: %s\n' "$(awk -v a="$v" -v b="$h" 'BEGIN { printf "%.2f", a / b }')"
