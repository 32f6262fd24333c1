#!/usr/bin/env bash
# benchcmp.sh OLD NEW PKG... — the same benchmarks of two revisions, in one run.
#
# Builds the test binaries of each package at OLD and at NEW (any git
# revision; NEW may be "." for the work tree), then runs them in turns,
# OLD then NEW, -count times (BENCHCOUNT, default 5) with -benchtime
# BENCHTIME (default 1s), so a noisy machine slows both alike.
# Prints, per benchmark, the median ns/op of each and the ratio NEW/OLD:
# the figure docs/performance.md records. BENCH picks the benchmarks (a
# -bench regexp, default '.'); the environment of .ci/deps.sh (PostgreSQL
# and the rest) is the caller's.
#
#   bash .ci/benchcmp.sh 60d1279 . ./reconcile ./state/dirstore
set -euo pipefail
old=$1 new=$2
shift 2
count=${BENCHCOUNT:-5}
benchtime=${BENCHTIME:-1s}
bench=${BENCH:-.}
top=$(git rev-parse --show-toplevel)
work=$(mktemp -d)
trap 'git -C "$top" worktree remove --force "$work/old" >/dev/null 2>&1 || true; [ "$new" = . ] || git -C "$top" worktree remove --force "$work/new" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

tree() { # tree REV DIR: a checkout of REV (the work tree itself for ".")
	if [ "$1" = . ]; then echo "$top"; return; fi
	git -C "$top" worktree add --detach -q "$2" "$1"
	echo "$2"
}
oldtree=$(tree "$old" "$work/old")
newtree=$(tree "$new" "$work/new")

for pkg in "$@"; do
	name=$(echo "$pkg" | tr '/.' '__')
	(cd "$oldtree" && go test -c -o "$work/$name.old" "$pkg")
	(cd "$newtree" && go test -c -o "$work/$name.new" "$pkg")
	dir=${pkg#./}
	for i in $(seq "$count"); do
		for side in old new; do
			tr=$oldtree
			[ $side = new ] && tr=$newtree
			(cd "$tr/$dir" && "$work/$name.$side" -test.run '^$' -test.bench "$bench" -test.benchtime "$benchtime" -test.benchmem) |
				awk -v side=$side -v pkg="$pkg" '/^Benchmark/ { for (j = 3; j <= NF; j++) if ($(j+1) == "ns/op") print pkg, $1, side, $j }' >>"$work/results"
		done
	done
done

# Medians per benchmark and side, then the ratio.
printf "%-60s %14s %14s %7s\n" "benchmark" "old ns/op" "new ns/op" "new/old"
sort -k1,1 -k2,2 -k3,3 -k4,4g "$work/results" | awk '
	{ key = $1 " " $2; v[key, $3, ++n[key, $3]] = $4; keys[key] = 1 }
	function median(key, side,   c) { c = n[key, side]; if (c == 0) return 0; return (c % 2) ? v[key, side, (c + 1) / 2] : (v[key, side, c / 2] + v[key, side, c / 2 + 1]) / 2 }
	END {
		for (k in keys) {
			o = median(k, "old"); w = median(k, "new")
			printf "%-60s %14.0f %14.0f %7.2f\n", k, o, w, (o > 0 ? w / o : 0)
		}
	}' | sort
