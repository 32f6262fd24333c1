package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
)

// TestRecoveryDeadLetterKilled: a reconcile SIGKILLed at any instant of
// the pass that makes an entry a dead letter loses nothing: after each
// kill the entry the real bridge refuses (413: its text is over the
// bound, as a prompt queued before the framed check could be) is either
// still queued or a dead letter, never gone, `check` is clean, and the
// entry queued behind it is delivered or still queued. A pass that runs
// to its end then buries every such entry once and delivers the rest.
func TestRecoveryDeadLetterKilled(t *testing.T) {
	r := newRig(t, nil, echoInit()...)
	id := "rec-dead"
	r.wake(id)
	r.waitIdle(id, 10*time.Second)
	ctx := context.Background()
	open := func() *dirstore.Store {
		st, err := dirstore.Open(ctx, r.store, dirstore.Options{})
		require.NoError(t, err)
		return st
	}
	lists := func() (queued, dead map[string]bool) {
		st := open()
		defer st.Close()
		queued, dead = map[string]bool{}, map[string]bool{}
		require.NoError(t, st.View(ctx, func(tx state.Tx) error {
			q, err := tx.Outbox(ctx, id)
			for _, e := range q {
				queued[e.ID] = true
			}
			if err != nil {
				return err
			}
			d, err := tx.DeadLetters(ctx, id)
			for _, e := range d {
				dead[e.ID] = true
			}
			return err
		}))
		return queued, dead
	}
	// Kills land anywhere in a pass: before it posts, between the 413
	// and its commit, in the commit, or after it (a pass that finished).
	start := time.Now()
	r.ok("reconcile")
	span := max(time.Since(start), 400*time.Millisecond)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	big := strings.Repeat("x", bridge.MaxPromptBytes+1000)
	var bigs []string
	killed := 0
	for round := 0; round < 8; round++ {
		b, s := fmt.Sprintf("big-%d", round), fmt.Sprintf("small-%d", round)
		bigs = append(bigs, b)
		st := open()
		require.NoError(t, st.Update(ctx, func(tx state.Tx) error {
			if _, err := tx.Enqueue(ctx, state.OutboxEntry{ID: b, Spore: id, From: "user:test", Text: big}); err != nil {
				return err
			}
			_, err := tx.Enqueue(ctx, state.OutboxEntry{ID: s, Spore: id, From: "user:test", Text: "round " + s})
			return err
		}))
		require.NoError(t, st.Close())

		delay := time.Duration(rng.Int64N(int64(span)))
		res, k := r.runKilledAfter(delay, "reconcile")
		if k {
			killed++
		} else {
			require.Contains(t, []int{0, 3}, res.code, "%s", res)
		}
		r.ok("check")
		queued, dead := lists()
		for _, e := range bigs {
			require.True(t, queued[e] != dead[e], "round %d (killed after %s: %v): %s is queued (%v) or dead (%v), exactly one", round, delay, k, e, queued[e], dead[e])
		}
		r.waitIdle(id, 10*time.Second)
	}
	t.Logf("%d of 8 passes killed within %s", killed, span)

	res := r.run("reconcile")
	require.Contains(t, []int{0, 3}, res.code, "%s", res)
	queued, dead := lists()
	require.Empty(t, queued, "everything delivered or buried")
	for _, e := range bigs {
		require.True(t, dead[e], "%s is a dead letter", e)
	}
	n := 0
	for _, ev := range r.storedEvents(id) {
		if ev.Action == "dead-letter" {
			n++
		}
	}
	require.Equal(t, len(bigs), n, "one dead-letter event per entry, however many passes were killed")
	out := r.ok("outbox", id, "-o", "name")
	for _, e := range bigs {
		require.Contains(t, out, "message/"+e+"\n")
	}
}
