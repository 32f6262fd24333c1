package main

// The scheduled prompts' row (docs/schedules.md): a colony's schedule due
// every minute, reconciles SIGKILLed at random points of their passes
// across several slots; each slot's prompt is recorded once and
// delivered once, whatever was killed where, and check stays clean.

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/pgstore/pgtest"
)

const tickColony = `apiVersion: sporectl/v1
kind: Colony
metadata: {name: default}
spec:
  schedules:
  - name: tick
    to: sched-1
    cron: "* * * * *"
    prompt: the minute's tick
  spores: []
`

// slotEvents are the events of slot (NAME@TIME) in evs.
func slotEvents(evs []state.Event, slot string) []state.Event {
	var out []state.Event
	for _, e := range evs {
		if e.From == "sporectl:schedule:"+slot {
			out = append(out, e)
		}
	}
	return out
}

// untilSecond sleeps until the clock's second within the minute is at
// least from and below to (the next minute's, if past it).
func untilSecond(from, to int) time.Time {
	now := time.Now()
	if s := now.Second(); s >= from && s < to {
		return now
	}
	at := now.Truncate(time.Minute).Add(time.Duration(from) * time.Second)
	if !at.After(now) {
		at = at.Add(time.Minute)
	}
	time.Sleep(time.Until(at))
	return time.Now()
}

// TestRecoveryScheduledPromptReconcileKilled — a schedule applied does
// not fire for the minute it was applied in; at each of three slots,
// reconciles are SIGKILLed later and later in their pass (load, the
// transaction that claims the slot and records the prompt, the delivery,
// the commit) until one finishes: after every kill the slot's prompt is
// in the store at most once, and after the slot's last pass exactly once,
// delivered once; check is clean throughout. On both stores.
func TestRecoveryScheduledPromptReconcileKilled(t *testing.T) {
	for _, kind := range []string{"dir", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			if kind == "postgres" {
				pgtest.Shared(t) // skips without PostgreSQL, fails in CI
			}
			t.Parallel() // the two wait out their minutes together
			scheduleKilled(t, kind)
		})
	}
}

func scheduleKilled(t *testing.T, kind string) {
	var r *rig
	switch kind {
	case "dir":
		r = newRig(t, nil, echoInit()...)
	case "postgres":
		r = &rig{t: t, store: pgtest.NewDatabase(t), env: []string{"XDG_STATE_HOME=" + t.TempDir()}, root: "/nonexistent"}
		r.ok(append([]string{"init"}, echoInit()...)...)
	}
	// The kills walk through a pass in steps of this many µs: a pass on
	// PostgreSQL takes longer (connections, locks).
	step := 10_000
	if kind == "postgres" {
		step = 30_000
	}
	const id = "sched-1"
	r.wakeIdle(id)
	r.settle(id, 30*time.Second)
	file := filepath.Join(t.TempDir(), "colony.yaml")
	require.NoError(t, os.WriteFile(file, []byte(tickColony), 0o600))

	untilSecond(5, 45) // the apply and its pass within one minute
	applied := time.Now().Truncate(time.Minute)
	r.ok("apply", "-f", file)
	r.reconcile()
	require.Empty(t, slotEvents(r.storedEvents(id), "tick@"+applied.UTC().Format(time.RFC3339)), "the minute it was applied in is past")

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 38))
	killed := 0
	var slots []string
	last := applied
	for range 3 {
		// The next minute's slot, early in it.
		time.Sleep(time.Until(last.Add(time.Minute + time.Second)))
		now := untilSecond(1, 50)
		last = now.Truncate(time.Minute)
		slot := "tick@" + last.UTC().Format(time.RFC3339)
		slots = append(slots, slot)
		for round := 0; ; round++ {
			require.Less(t, round, 100, "%s: no reconcile finished", slot)
			delay := time.Duration(round*step+rng.IntN(step)) * time.Microsecond
			res, k := r.runKilledAfter(delay, "reconcile")
			what := fmt.Sprintf("%s, round %d, reconcile killed after %s", slot, round, delay)
			r.ok("check")
			require.LessOrEqual(t, len(slotEvents(r.storedEvents(id), slot)), 1, what)
			if !k {
				require.Contains(t, []int{0, 3}, res.code, "%s", res)
				break
			}
			killed++
		}
		r.reconcile() // delivers what a killed pass recorded and left queued
		evs := r.storedEvents(id)
		got := slotEvents(evs, slot)
		require.Len(t, got, 1, "%s recorded once", slot)
		require.Equal(t, "[scheduled: tick]\nthe minute's tick", got[0].Text)
		delivered := 0
		for _, e := range evs {
			if e.Kind == state.KindLifecycle && e.Action == "delivered" && strings.HasPrefix(e.Text, "prompt "+got[0].Action+" delivered") {
				delivered++
			}
		}
		require.Equal(t, 1, delivered, "%s delivered once", slot)
		_, pending := r.record(id)
		require.Empty(t, pending)
	}
	t.Logf("%s: %d reconciles SIGKILLed at random across slots %s", kind, killed, strings.Join(slots, ", "))
	// Every slot in the log once, those the test waited in and any a
	// pass found as a minute turned.
	seen := map[string]bool{}
	for _, e := range r.storedEvents(id) {
		if slot, ok := strings.CutPrefix(e.From, "sporectl:schedule:"); ok {
			require.False(t, seen[slot], "%s recorded twice", slot)
			seen[slot] = true
		}
	}
	r.ok("check")
}
