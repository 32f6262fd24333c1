package storecopy_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/storetest"
)

// dump is everything a store holds, read through the interface.
type dump = storetest.Dump

// read dumps s with every time as the least precise backend keeps it.
func read(t *testing.T, s state.Store) dump {
	t.Helper()
	d, err := storetest.ReadAll(context.Background(), s)
	require.NoError(t, err)
	for i := range d.Spores {
		sp := &d.Spores[i]
		sp.Created, sp.Updated, sp.NotBefore = norm(sp.Created), norm(sp.Updated), norm(sp.NotBefore)
		for j := range sp.Failures {
			sp.Failures[j] = norm(sp.Failures[j])
		}
	}
	for _, evs := range d.Events {
		for j := range evs {
			evs[j].At = norm(evs[j].At)
		}
	}
	for _, out := range d.Outbox {
		for j := range out {
			out[j].At = norm(out[j].At)
		}
	}
	return *d
}

// norm compares times as the least precise backend keeps them
// (microseconds, in Postgres), in UTC.
func norm(tm time.Time) time.Time {
	if tm.IsZero() {
		return time.Time{}
	}
	return tm.UTC().Truncate(time.Microsecond)
}

// fill writes a bit of everything the model has, including text that is
// hard to store, in a few transactions.
func fill(t *testing.T, s state.Store) {
	t.Helper()
	ctx := context.Background()
	base := time.Date(2026, 11, 2, 3, 4, 5, 123456000, time.UTC)
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		if err := tx.PutSettings(ctx, state.Settings{Runtime: "kube", Agent: "echo", Namespace: "spores", StorageClass: "local-path",
			Image: "spore:1", DefaultSpec: state.Spec{CPU: "2", Memory: "3Gi", Storage: "5Gi"},
			Recovery: state.RecoveryPolicy{BackoffInitial: state.Duration(15 * time.Second), BackoffMax: state.Duration(time.Hour),
				BreakerFailures: 7, BreakerWindow: state.Duration(20 * time.Minute), HealthyAfter: state.Duration(90 * time.Second)}}); err != nil {
			return err
		}
		for i, id := range []string{"arch", "colony-a", "worker-1", "worker-2", "quiet"} {
			sp := storetest.Spore(id)
			sp.Created, sp.Updated = base.Add(time.Duration(i)*time.Second), base.Add(time.Hour)
			switch id {
			case "arch":
				sp.Rank, sp.Desired = state.RankArch, state.Running
			case "colony-a":
				sp.Rank, sp.Colony = state.RankColony, "a"
			case "worker-1":
				sp.Swarm, sp.Role, sp.Restarts, sp.BreakerOpen, sp.BridgeSeq = "team", "dev", 4, true, 77
				sp.Failures = []time.Time{base, base.Add(time.Minute)}
				sp.NotBefore = base.Add(2 * time.Hour)
				sp.Generation, sp.Health, sp.HealthReason = 12, "Dead", "CrashLoop"
			case "worker-2":
				sp.Generation, sp.Health = 1<<40, "Healthy"
			}
			if err := tx.CreateSpore(ctx, sp); err != nil {
				return err
			}
		}
		return nil
	}))
	for round := 0; round < 3; round++ {
		require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
			for _, id := range []string{"arch", "worker-1", "worker-2"} {
				evs := []state.Event{
					{Kind: state.KindLifecycle, Action: "woke", At: base.Add(time.Duration(round) * time.Minute)},
					{Kind: state.KindPrompt, From: "user:o'brien", Text: fmt.Sprintf("round %d: it's \"quoted\" \x00 nul 🍄", round)},
					{Kind: state.KindAgent, BridgeSeq: uint64(round + 1), Line: []byte(fmt.Sprintf(`{"type":"assistant","n":%d}`, round))},
					{Kind: state.KindMessage, From: "spore:arch", Text: strings.Repeat("long ", 1000)},
					{Kind: state.KindBreaker, Action: "opened"},
				}
				if _, err := tx.Append(ctx, id, evs); err != nil {
					return err
				}
			}
			return nil
		}))
	}
	// A log longer than one copy page.
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		evs := make([]state.Event, 12000)
		for i := range evs {
			evs[i] = state.Event{Kind: state.KindAgent, BridgeSeq: uint64(i), Line: []byte(fmt.Sprintf(`"line %d"`, i))}
		}
		_, err := tx.Append(ctx, "worker-2", evs)
		return err
	}))
	_, h1, _ := state.NewToken()
	_, h2, _ := state.NewToken()
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		for _, e := range []state.OutboxEntry{
			{ID: "m3", Spore: "worker-1", From: "user:a", Text: "third queued first", At: base},
			{ID: "m1", Spore: "worker-1", From: "spore:arch", Text: "nul \x00 too", At: base.Add(time.Second), Wake: true},
			{ID: "m2", Spore: "quiet", From: "user:a", Text: "x"},
			{ID: "m4", Spore: "worker-1", From: "user:a", Text: "refused for good", At: base.Add(2 * time.Second)},
		} {
			if _, err := tx.Enqueue(ctx, e); err != nil {
				return err
			}
		}
		// A dead letter is copied as one, with its reason and time.
		if err := tx.Bury(ctx, "worker-1", "m4", state.DeadLetter{Reason: "the bridge answered 413", At: base.Add(3 * time.Second)}); err != nil {
			return err
		}
		if err := tx.SetTokenHash(ctx, "arch", h1); err != nil {
			return err
		}
		return tx.SetTokenHash(ctx, "worker-1", h2)
	}))
}

// requireSame compares two dumps piece by piece, so a difference is
// reported where it is rather than as a diff of megabytes.
func requireSame(t *testing.T, want, got dump, what string) {
	t.Helper()
	require.Equal(t, want.Settings, got.Settings, "%s: settings", what)
	require.Equal(t, want.Spores, got.Spores, "%s: spores", what)
	require.Equal(t, want.Heads, got.Heads, "%s: heads", what)
	require.Equal(t, want.Tokens, got.Tokens, "%s: tokens", what)
	require.Equal(t, want.Outbox, got.Outbox, "%s: outbox", what)
	require.Equal(t, want.Dead, got.Dead, "%s: dead letters", what)
	require.Equal(t, len(want.Events), len(got.Events), "%s: spores with event logs", what)
	for id, evs := range want.Events {
		require.Len(t, got.Events[id], len(evs), "%s: events of %s", what, id)
		for i := range evs {
			require.Equal(t, evs[i], got.Events[id][i], "%s: event %d of %s", what, evs[i].Seq, id)
		}
	}
}
