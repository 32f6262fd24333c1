#!/usr/bin/env bash
# The main job on the embedded default — a directory store and the local
# runtime, with the built-in echo agent (no API key needed) — told as a
# recovery story, in a temporary directory that is removed afterwards,
# bridges included: spores are created and prompted, then a bridge and a
# whole spore are SIGKILLed, a prompt is sent while one is dead, and one
# `reconcile` brings everything back; status, chat and check show that
# every line is in the store once and every prompt was delivered once.
# Then `reconcile --every` runs the colony by itself: a bridge killed
# under it is restarted with nobody running a command, and SIGTERM ends
# the loop with exit 0.
set -euo pipefail
bin="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
dir="$(mktemp -d)"
export SPORECTL_STORE="$dir/store"
spores=(worker-1 worker-2 worker-3)
loop=""
cleanup() {
	[ -z "$loop" ] || kill -TERM "$loop" 2>/dev/null || true
	"$bin" stop "${spores[@]}" >/dev/null 2>&1 || true
	rm -rf "$dir"
}
trap cleanup EXIT
# step (the command line as a shell needs it typed, then run) and say.
source "$(dirname "${BASH_SOURCE[0]}")/demo-steps.sh"
pid_of() { sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$SPORECTL_STORE/run/$1.json"; }

step init --runtime local --agent echo --backoff-initial 1s --no-operator
for s in "${spores[@]}"; do step create "$s" --colony lab --wake; done
step wake "${spores[@]}" --wait 20s
step prompt worker-1 "hello, worker-1"
step prompt worker-2 "hello, worker-2"
step status

say "SIGKILL worker-1's bridge, and worker-2's whole process tree"
kill -KILL "$(pid_of worker-1)"
kill -KILL -- "-$(pid_of worker-2)"
sleep 0.5
step status || echo "(exit $?: spores need attention)"

say "a prompt while worker-1 is dead waits in the store's outbox"
step prompt worker-1 "are you back?"

say "one reconcile restarts both on their homes (backing off, counted by the breaker): exit 0, restarted and coming up is no page"
step reconcile
for i in $(seq 1 100); do
	"$bin" status >/dev/null 2>&1 && break
	sleep 0.2
done
say "the next pass delivers what waited, exactly once"
step reconcile
sleep 1
step status
step chat worker-1
step events worker-1
say "every line once, in order; every prompt delivered once"
n=$("$bin" events worker-1 -o json | grep -c '"action": "delivered"' || true)
echo "prompts delivered to worker-1: $n (sent: 2)"
[ "$n" -eq 2 ]

say "a colony that runs itself: a pass every second, until SIGTERM"
printf '\n$ sporectl reconcile --every 1s &\n'
"$bin" reconcile --every 1s >"$dir/loop.out" 2>"$dir/loop.err" &
loop=$!
for i in $(seq 1 100); do grep -q 'Z reconcile: ' "$dir/loop.err" && break; sleep 0.1; done
say "SIGKILL worker-3's bridge: nobody runs a command, the loop restarts it"
kill -KILL "$(pid_of worker-3)"
for i in $(seq 1 150); do
	grep -q 'worker-3 restart' "$dir/loop.err" && "$bin" status worker-3 >/dev/null 2>&1 && break
	sleep 0.2
done
step status worker-3
say "SIGTERM ends the loop after the pass in flight"
kill -TERM "$loop"
code=0
wait "$loop" || code=$?
loop=""
echo "(reconcile --every exited $code)"
cat "$dir/loop.err"
[ "$code" -eq 0 ]
grep -q 'worker-3 restart' "$dir/loop.err"

step reconcile >/dev/null
ls "$SPORECTL_STORE/views" "$SPORECTL_STORE/views/transcripts"
step check
