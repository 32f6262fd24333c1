package reconcile_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/outbox"
	"github.com/sporectl/sporectl/state"
)

// TestPGTellAndSummonsCross: a spore's tell to the [arch] mycologist
// (SendOnce: the target's row first, then the sender's log) and a
// summons raised in the transaction that appends that spore's lines (the
// spore's row first, then the [arch]'s) lock the same two rows in
// opposite orders. Run together round after round on PostgreSQL, none
// fails (the store takes the locks in one order), and every tell and
// every summons is recorded once.
func TestPGTellAndSummonsCross(t *testing.T) {
	e, _ := newPGEnv(t, "arch", "worker")
	ctx := context.Background()
	e.update("arch", func(sp *state.Spore) { sp.Rank, sp.Desired = state.RankArch, state.Running })
	e.update("worker", func(sp *state.Spore) { sp.Desired = state.Running })
	const rounds = 60
	var failed []error
	for r := range rounds {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		wg.Add(2)
		go func() {
			defer wg.Done()
			m := outbox.Message{To: "arch", From: "spore:worker", Kind: state.KindMessage, Text: fmt.Sprintf("tell %d", r)}
			_, errs[0] = outbox.SendOnce(ctx, e.st, m, outbox.Once{ID: fmt.Sprintf("tell-%d", r), Window: 0, Sender: "worker", KeepStopped: true}, e.now)
		}()
		go func() {
			defer wg.Done()
			errs[1] = e.st.Update(ctx, func(tx state.Tx) error {
				if _, err := tx.Append(ctx, "worker", []state.Event{{Kind: state.KindLifecycle, Action: "report-deploy-failed", Text: fmt.Sprintf("deploy %d failed", r)}}); err != nil {
					return err
				}
				// A window apart, so worker's limit of summonses holds none back.
				now := e.now.Add(time.Duration(r) * reconcile.SummonsPer)
				_, err := reconcile.Summon(ctx, tx, "arch", []reconcile.Summons{{Key: fmt.Sprintf("deploy-%d", r), Text: fmt.Sprintf("summons %d", r), By: "worker"}}, now)
				return err
			})
		}()
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				failed = append(failed, fmt.Errorf("round %d: %w", r, err))
			}
		}
	}
	require.Empty(t, failed)
	var outbox []state.OutboxEntry
	var worker []state.Event
	require.NoError(t, e.st.View(ctx, func(tx state.Tx) error {
		var err error
		if outbox, err = tx.Outbox(ctx, "arch"); err != nil {
			return err
		}
		worker, err = tx.Events(ctx, "worker", 0, 0)
		return err
	}))
	require.Len(t, outbox, 2*rounds, "every tell and every summons queued once")
	require.Len(t, worker, 2*rounds, "a sent event per tell and a report per round")
}
