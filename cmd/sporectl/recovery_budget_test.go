package main

// The budget row (docs/budgets.md): the real binary and the echo agent,
// whose result lines report one token per word. A spore with a 20-token
// budget takes prompts until it is over; its next prompt is queued with
// exit 16, it is asleep after its turn with nothing lost, its colony
// mycologist is summoned once; a raised budget wakes it and delivers the
// queued prompt.

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge/fakeapi"
	"github.com/sporectl/sporectl/state"
)

func TestRecoveryBudgetSleepsAndARaisedBudgetDelivers(t *testing.T) {
	// The echo agent calls no model: budgets judge its own report (the
	// direct mode).
	r := newRig(t, nil, append(echoInit(), "--model-gateway", "off")...)
	t.Cleanup(func() { r.cleanup("myc") })
	r.ok("create", "myc", "--rank", "colony", "--wake")
	r.ok("wake", "myc", "--wait", "20s")
	id := "spender"
	t.Cleanup(func() { r.cleanup(id) })
	r.ok("create", id, "--wake", "--budget-tokens", "20")
	r.ok("wake", id, "--wait", "20s")
	r.waitHealthy(id, 30*time.Second)

	// Each turn: 4 words in, 5 out ("echo: a b c d"): 9 tokens.
	for range 2 {
		_, st := r.prompt(id, "a b c d")
		require.Equal(t, "delivered", st)
		r.settle(id, 30*time.Second)
	}
	// 18 of 20: still within; the third turn is left to end on its own
	// (a settle's reconcile would put it to sleep, reported as Diverged
	// by the pass that stops it).
	_, st := r.prompt(id, "a b c d")
	require.Equal(t, "delivered", st)
	r.waitIdle(id, 30*time.Second)
	// 27 of 20: the reconcile that counts the last turn puts it to sleep.
	rep, _ := r.reconcile()
	require.True(t, rep.did(id, "sleep"), "over budget, its turn ended: %+v", rep.Actions)
	require.Empty(t, r.procs(id), "its processes are gone")
	sp, _ := r.record(id)
	require.Equal(t, state.Paused, sp.Desired)
	require.Equal(t, state.ByBudget, sp.DesiredBy)
	desired, _, reason, by := r.slept(id)
	require.Equal(t, "Paused", desired)
	require.Equal(t, "budget", by)
	require.Equal(t, "asleep: over budget (27/20 tokens today)", reason)

	res := r.run("prompt", id, "one more")
	require.Equal(t, 16, res.code, "%s", res)
	require.Contains(t, res.stderr, "over budget (27/20 tokens today)")
	_, queued := r.record(id)
	require.Len(t, queued, 1, "the prompt waits in the outbox")
	waiting := queued[0].ID

	summons := func() int {
		return len(slices.DeleteFunc(r.events("myc"), func(e state.Event) bool {
			return e.Kind != state.KindMessage || e.From != "sporectl:summons"
		}))
	}
	require.Equal(t, 1, summons(), "its colony mycologist is summoned")
	r.reconcile()
	require.Equal(t, 1, summons(), "once")
	sp, queued = r.record(id)
	require.Equal(t, state.Paused, sp.Desired, "still over: asleep")
	require.Len(t, queued, 1)

	// A raised budget: the next reconcile wakes it, then delivers.
	require.Equal(t, "spore/"+id+" configured\n", r.ok("set", "budget", id, "--tokens", "100"))
	rep, _ = r.reconcile()
	require.True(t, rep.did(id, "wake"), "%+v", rep.Actions)
	r.waitHealthy(id, 30*time.Second)
	deadline := time.Now().Add(30 * time.Second)
	for {
		r.reconcile(id)
		if _, queued = r.record(id); len(queued) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.Empty(t, queued, "the queued prompt is delivered")
	r.settle(id, 30*time.Second)
	i := slices.IndexFunc(r.events(id), func(e state.Event) bool {
		return e.Action == "delivered" && strings.HasPrefix(e.Text, "prompt "+waiting+" delivered")
	})
	require.GreaterOrEqual(t, i, 0, "prompt %s delivered", waiting)
}

// TestRecoveryBudgetCountsClaudeCodesUsage — in production a budget is
// counted from real Claude Code's result lines (usage, total_cost_usd),
// here against the fake Messages API (100 input tokens a request): a
// spore with a 50-token budget is over it after one turn, and reconcile
// puts it to sleep saying so.
func TestRecoveryBudgetCountsClaudeCodesUsage(t *testing.T) {
	api := fakeapi.New()
	api.Script(fakeapi.Rule{Match: "say hello", Steps: []fakeapi.Reply{fakeapi.Text("hello from the fake model")}})
	r := claudeRig(t, api)
	id := "claude-spender"
	r.wake(id)
	require.Equal(t, "spore/"+id+" configured\n", r.ok("set", "budget", id, "--tokens", "50"))
	_, st := r.prompt(id, "say hello")
	require.Equal(t, "delivered", st)
	r.waitIdle(id, 90*time.Second)
	rep, _ := r.reconcile()
	require.True(t, rep.did(id, "sleep"), "over budget after one turn: %+v", rep.Actions)
	sp, _ := r.record(id)
	require.Equal(t, state.ByBudget, sp.DesiredBy)
	spend := state.SpendOn(sp.Activity, time.Now())
	require.GreaterOrEqual(t, spend.Tokens, int64(100), "Claude Code's usage counted: %+v", sp.Activity)
	_, _, reason, _ := r.slept(id)
	require.Contains(t, reason, "asleep: over budget (")
	require.Contains(t, reason, "/50 tokens today)")
}

// TestRecoveryBudgetSleepReconcileKilled — reconciles SIGKILLed at random
// points while they put spores over budget to sleep. After each kill every
// spore is wished awake with its processes running, or wished asleep by
// budget with exactly one summons about it in its colony mycologist's
// log (the sleep and the summons are one transaction); one wished asleep
// whose processes the killed pass did not end yet has them ended by the
// next reconcile. check is clean throughout and no committed event is
// lost.
func TestRecoveryBudgetSleepReconcileKilled(t *testing.T) {
	// The echo agent calls no model: budgets judge its own report (the
	// direct mode).
	r := newRig(t, nil, append(echoInit(), "--model-gateway", "off")...)
	t.Cleanup(func() { r.cleanup("myc") })
	r.ok("create", "myc", "--rank", "colony", "--wake")
	r.ok("wake", "myc", "--wait", "20s")
	ids := []string{"bud-k1", "bud-k2", "bud-k3", "bud-k4"}
	for _, id := range ids {
		t.Cleanup(func() { r.cleanup(id) })
		r.ok("create", id, "--wake", "--budget-tokens", "5")
		r.ok("wake", id, "--wait", "20s")
		r.waitHealthy(id, 30*time.Second)
	}
	for _, id := range ids {
		_, st := r.prompt(id, "a b c") // 3 in, 4 out: 7 of 5
		require.Equal(t, "delivered", st)
	}
	for _, id := range ids {
		r.waitIdle(id, 30*time.Second)
	}
	summonsAbout := func(id string) int {
		n := 0
		for _, e := range r.events("myc") {
			if e.Kind == state.KindMessage && e.From == "sporectl:summons" && strings.Contains(e.Text, "spore "+id+" reached") {
				n++
			}
		}
		return n
	}

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 5))
	killed, halfway := 0, 0
	asleep := func() bool {
		for _, id := range ids {
			if sp, _ := r.record(id); sp.Desired != state.Paused || len(r.procs(id)) > 0 {
				return false
			}
		}
		return true
	}
	for round := 0; round < 16 && !asleep(); round++ {
		before := map[string][]state.Event{}
		for _, id := range ids {
			before[id] = r.storedEvents(id)
		}
		delay := time.Duration(round*25_000+rng.IntN(25_000)) * time.Microsecond
		res, k := r.runKilledAfter(delay, "reconcile")
		if k {
			killed++
		} else {
			require.Contains(t, []int{0, 3}, res.code, "%s", res)
		}
		what := fmt.Sprintf("round %d, reconcile killed after %s", round, delay)
		r.ok("check")
		for _, id := range ids {
			requirePrefix(t, before[id], r.storedEvents(id), what+": "+id)
			sp, _ := r.record(id)
			switch sp.Desired {
			case state.Running:
				require.NotEmpty(t, r.bridgePIDs(id), "%s: %s is wished awake but nothing runs", what, id)
				require.Zero(t, summonsAbout(id), "%s: %s: no summons before its sleep", what, id)
			case state.Paused:
				require.Equal(t, state.ByBudget, sp.DesiredBy, "%s: %s", what, id)
				require.Equal(t, 1, summonsAbout(id), "%s: %s: one summons with its sleep", what, id)
				if len(r.procs(id)) > 0 {
					halfway++
				}
			default:
				t.Fatalf("%s: %s is %s", what, id, sp.Desired)
			}
		}
	}
	t.Logf("%d reconciles SIGKILLed at random; %d times a spore was left wished asleep with its processes running", killed, halfway)

	rep, _ := r.reconcile()
	for _, id := range ids {
		s := rep.spore(t, id)
		require.Equal(t, "Paused", s.Desired, "%+v", s)
		require.Empty(t, r.procs(id), "%s", id)
		require.Equal(t, 1, summonsAbout(id), "%s: summoned once", id)
	}
}
