#!/usr/bin/env bash
# compare.sh — whole sporectl processes timed on stores of 1,000 and 10,000
# spores, side by side, with the ratio 10k/1k of each; and, when
# SPORECTL_KUBE_BIN_DIR is set, sporectl's kube status against kubectl on
# the same API server (`make compare`).
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
#   chat ID        one spore's conversation (a pass over it first)
#   events ID      one spore's events (its row and its event log)
#   status -o json every spore
#   reconcile      a pass with nothing to do (every spore asleep)
#   version        against the hello-world binary
#
# The kube part: kube/kubetest/cmd/kubefleet starts kubetest's etcd and
# kube-apiserver from $SPORECTL_KUBE_BIN_DIR and makes KUBE_SPORES (default
# 1001) spores with `sporectl init --runtime kube` and one `create ID…
# --wake` on a directory store; its test kubelet reports every pod Running
# and Ready at an address where no bridge answers (each call through the
# pod proxy is refused at once; KUBE_POD_IP names another such address
# when something listens on the bridge's port there). Both commands are checked to see the whole
# fleet, then `sporectl status -o json` (every bridge asked, none
# answering) and `kubectl get pods -o json` in the namespace, with the same
# admin kubeconfig, are timed RUNS times each in turns, after one untimed
# run of each; then every pod is reported not Ready (no bridge is asked)
# and status is timed again. One spore alone, Ready: `sporectl status ID
# -o json` (its pod and claim listed by label, its bridge asked) against
# `kubectl get pod spore-00007 -o json`. Beside each median wall time and
# its ratio to kubectl's (the fleet's or the one pod's): the command's own CPU and what the API server and etcd spent
# meanwhile (their /proc clock ticks, 10 ms steps), which is where the
# time goes, and the ratio of that CPU (the three summed, per run) to
# kubectl's: on a machine loaded past its cores the wall times stretch
# with the queue, the CPU each command costs does not. Without SPORECTL_KUBE_BIN_DIR the script says the kube part
# is not run; it needs jq.
#
# HISTORY=1 times the dir part on used stores: after the fleet's create,
# a create and a delete of half as many ids again, which leave the commit
# log that every command decodes as it loads the state (a store just
# built has none; docs/performance.md, "Commands about one spore at
# 10,000").
#
# PARTS (default "dir kube") picks the parts. Prints tables on stdout;
# the machine's load is in each one's first line (on a shared machine,
# compare ratios, not milliseconds).
set -euo pipefail
runs=${RUNS:-7}
parts=${PARTS:-dir kube}
kube_spores=${KUBE_SPORES:-1001}
sizes=(1000 10000)
top=$(git rev-parse --show-toplevel)
work=$(mktemp -d)
fleet_pid=
cleanup() {
	if [[ -n $fleet_pid ]]; then
		kill "$fleet_pid" 2>/dev/null || true
		wait "$fleet_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT
for part in $parts; do
	case $part in
	dir | kube) ;;
	*) echo "compare: unknown part $part in PARTS (dir, kube)" >&2; exit 2 ;;
	esac
done

CGO_ENABLED=0 go build -o "$work/sporectl" "$top/cmd/sporectl" # as make build and the image build it
mkdir -p "$work/hello"
cat >"$work/hello/main.go" <<'GO'
package main

import "fmt"

func main() { fmt.Println("hello") }
GO
(cd "$work/hello" && go mod init hello >/dev/null 2>&1 && go build -o "$work/hello-bin" .)

s="$work/sporectl"

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

dir_part() {
	for n in "${sizes[@]}"; do
		st="$work/store-$n"
		"$s" --store "$st" init --runtime local --agent echo --no-operator >/dev/null
		ids=()
		for ((i = 0; i < n; i++)); do ids+=("$(printf 'spore-%05d' "$i")"); done
		start=$(date +%s.%N)
		"$s" --store "$st" create "${ids[@]}" >/dev/null
		end=$(date +%s.%N)
		build[$n]=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
		if [[ ${HISTORY:-} == 1 ]]; then
			ids=()
			for ((i = 0; i < n / 2; i++)); do ids+=("$(printf 'used-%05d' "$i")"); done
			"$s" --store "$st" create "${ids[@]}" >/dev/null
			"$s" --store "$st" delete "${ids[@]}" >/dev/null
			used[$n]=$(cat "$st"/txlog.* | wc -c)
		fi
	done

	names=(create prompt "status ID" "events ID" "chat ID" "status -o json" reconcile version)
	run_one() { # run_one NAME STORE
		case $1 in
		create) ms "$s" --store "$2" create extra-spore; "$s" --store "$2" delete extra-spore >/dev/null 2>&1 ;;
		prompt) ms "$s" --store "$2" prompt spore-00007 "hello" ;;
		"status ID") ms "$s" --store "$2" status spore-00007 ;;
		"events ID") ms "$s" --store "$2" events spore-00007 ;;
		"chat ID") ms "$s" --store "$2" chat spore-00007 ;;
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
	if [[ ${HISTORY:-} == 1 ]]; then
		printf '# used stores (HISTORY=1): commit log of %s bytes at 1,000, %s at 10,000\n' "${used[1000]}" "${used[10000]}"
	fi
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
}

# wait_env FILE READY: wait until kubefleet wrote FILE saying READY, or
# fail when it exited first.
wait_env() {
	local i
	for ((i = 0; i < 1200; i++)); do
		if [[ -f $1 ]] && grep -qx "READY=$2" "$1"; then return 0; fi
		if ! kill -0 "$fleet_pid" 2>/dev/null; then
			echo "compare: kubefleet exited before the fleet was up:" >&2
			cat "$work/kubefleet.log" >&2
			exit 1
		fi
		sleep 0.5
	done
	echo "compare: the fleet was not up after 10 minutes:" >&2
	cat "$work/kubefleet.log" >&2
	exit 1
}

# kube_run CMD…: one run of CMD against the fleet's server, printed as
# "WALL_US OWN_US API_US ETCD_US CPU_US": its wall time, its own CPU
# (user + sys, from the subshell's `times`), the CPU the API server and
# etcd spent meanwhile (from /proc, in clock ticks: 10 ms steps), and
# the three summed.
kube_run() {
	local a0 e0 out
	a0=$(ticks "$APISERVER_PID")
	e0=$(ticks "$ETCD_PID")
	out=$(
		a=$(date +%s%N)
		"$@" >/dev/null 2>&1 || true
		b=$(date +%s%N)
		echo $(((b - a) / 1000))
		times
	)
	awk -v api=$(($(ticks "$APISERVER_PID") - a0)) -v etcd=$(($(ticks "$ETCD_PID") - e0)) -v hz="$(getconf CLK_TCK)" '
		function sec(x, p) { split(x, p, "m"); sub("s", "", p[2]); return p[1] * 60 + p[2] }
		NR == 1 { wall = $1 }
		NR == 3 { own = (sec($1) + sec($2)) * 1e6 }
		END { a = api * 1e6 / hz; e = etcd * 1e6 / hz; printf "%d %d %d %d %d\n", wall, own, a, e, own + a + e }' <<<"$out"
}

# ticks PID: the user + sys CPU of process PID so far, in clock ticks.
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

kube_status() { kube_run "$s" --store "$STORE" --kubeconfig "$KUBECONFIG" status -o json; }
kubectl_pods() { kube_run "$kubectl" --kubeconfig "$KUBECONFIG" get pods -n "$NAMESPACE" -o json; }
kube_status_one() { kube_run "$s" --store "$STORE" --kubeconfig "$KUBECONFIG" status spore-00007 -o json; }
kubectl_pod() { kube_run "$kubectl" --kubeconfig "$KUBECONFIG" get pod spore-00007 -n "$NAMESPACE" -o json; }

# kube_check: both commands see the whole fleet, as the table says
# (a failing command would be timed as fast as nothing).
kube_check() {
	local want=$1 bridge=$2 got
	got=$("$s" --store "$STORE" --kubeconfig "$KUBECONFIG" status -o json 2>/dev/null |
		jq --arg b "$bridge" '[.spores[] | select(.desired == "Running" and .observed.pod == "Running" and .observed.bridge == "Down" and (.observed.reason // "") == $b)] | length' || true)
	if [[ $got != "$want" ]]; then
		echo "compare: sporectl status shows $got of $want spores Running with bridge Down (reason \"$bridge\")" >&2
		exit 1
	fi
	got=$("$kubectl" --kubeconfig "$KUBECONFIG" get pods -n "$NAMESPACE" -o json | jq '[.items[] | select(.status.phase == "Running")] | length')
	if [[ $got != "$want" ]]; then
		echo "compare: kubectl lists $got of $want pods Running" >&2
		exit 1
	fi
}

kube_part() {
	if [[ -z ${SPORECTL_KUBE_BIN_DIR:-} ]]; then
		echo '# kube status vs kubectl: not run: SPORECTL_KUBE_BIN_DIR is not set (it names the etcd, kube-apiserver and kubectl of .ci/kube-tools.sh: export SPORECTL_KUBE_BIN_DIR="$(.ci/kube-tools.sh)")'
		return 0
	fi
	kubectl="$SPORECTL_KUBE_BIN_DIR/kubectl"
	if [[ ! -x $kubectl ]] || ! command -v jq >/dev/null; then
		echo "compare: the kube part needs $kubectl and jq" >&2
		exit 1
	fi
	go build -o "$work/kubefleet" "$top/kube/kubetest/cmd/kubefleet"
	mkdir -p "$work/fleet"
	start=$(date +%s.%N)
	"$work/kubefleet" -sporectl "$s" -spores "$kube_spores" -dir "$work/fleet" ${KUBE_POD_IP:+-pod-ip "$KUBE_POD_IP"} 2>"$work/kubefleet.log" &
	fleet_pid=$!
	wait_env "$work/fleet/env" true
	end=$(date +%s.%N)
	# shellcheck disable=SC1091
	source "$work/fleet/env"
	kube_check "$kube_spores" BridgeNotAnswering

	# kt[ROW,COL]: one number per run of each row, for COL in 1 (wall), 2
	# (own CPU), 3 (API server), 4 (etcd), 5 (the three CPUs summed).
	local r c row line
	local -A kt
	local rows=("kubectl get pods -o json" "sporectl status -o json, Ready" "sporectl status -o json, not Ready"
		"kubectl get pod ID -o json" "sporectl status ID -o json, Ready")
	record() { # record ROW "W O A E"
		local i v
		i=0
		for v in $2; do
			i=$((i + 1))
			kt[$1,$i]+="$v "
		done
	}
	kube_status >/dev/null
	kubectl_pods >/dev/null
	for ((r = 0; r < runs; r++)); do
		record "${rows[1]}" "$(kube_status)"
		record "${rows[0]}" "$(kubectl_pods)"
	done
	kube_status_one >/dev/null
	kubectl_pod >/dev/null
	for ((r = 0; r < runs; r++)); do
		record "${rows[4]}" "$(kube_status_one)"
		record "${rows[3]}" "$(kubectl_pod)"
	done
	local load
	load=$(cut -d' ' -f1-3 /proc/loadavg)

	kill -USR1 "$fleet_pid"
	wait_env "$work/fleet/env" false
	kube_check "$kube_spores" ""
	kube_status >/dev/null
	for ((r = 0; r < runs; r++)); do
		record "${rows[2]}" "$(kube_status)"
	done

	printf '# kube status vs kubectl, whole processes, median of %d runs (ms); %d pods Running, one API server (%s); %s, %s cores, load %s\n' \
		"$runs" "$PODS" "$(paste -sd, "$SPORECTL_KUBE_BIN_DIR/VERSIONS" 2>/dev/null | sed 's/,/, /g')" "$(date -u +%FT%TZ)" "$(nproc)" "$load"
	printf '# fleet up (API server, init, create ID… --wake, pods Running) in %ss; Ready: every bridge asked through the pod proxy, each refused; not Ready: none asked\n' \
		"$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')"
	printf '%-34s %9s %7s %9s %9s %9s %9s %9s\n' command wall ratio "own CPU" "apiserver" etcd "CPU" "CPU ratio"
	local kubectl_wall kubectl_cpu
	kubectl_wall=$(tr ' ' '\n' <<<"${kt[${rows[0]},1]}" | grep . | median)
	kubectl_cpu=$(tr ' ' '\n' <<<"${kt[${rows[0]},5]}" | grep . | median)
	for row in "${rows[@]}"; do
		if [[ $row == "${rows[3]}" ]]; then
			# The one-spore rows are against kubectl's one pod.
			kubectl_wall=$(tr ' ' '\n' <<<"${kt[${rows[3]},1]}" | grep . | median)
			kubectl_cpu=$(tr ' ' '\n' <<<"${kt[${rows[3]},5]}" | grep . | median)
		fi
		line=()
		for c in 1 2 3 4 5; do line+=("$(tr ' ' '\n' <<<"${kt[$row,$c]}" | grep . | median)"); done
		printf '%-34s %9s %7s %9s %9s %9s %9s %9s\n' "$row" "${line[0]}" \
			"$(awk -v a="${line[0]}" -v b="$kubectl_wall" 'BEGIN { printf "%.2fx", a / b }')" "${line[1]}" "${line[2]}" "${line[3]}" \
			"${line[4]}" "$(awk -v a="${line[4]}" -v b="$kubectl_cpu" 'BEGIN { printf "%.2fx", a / b }')"
	done
}

for part in $parts; do
	case $part in
	dir) dir_part ;;
	kube) kube_part ;;
	esac
done
