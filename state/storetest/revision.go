package storetest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// testRevision: a View's revision is the same while nothing is committed
// (and within one View while others commit), and another after every
// kind of write; inside an Update it is "".
func testRevision(t *testing.T, s state.Store) {
	ctx := t.Context()
	revision := func() string {
		t.Helper()
		var rev string
		require.NoError(t, s.View(ctx, func(tx state.Tx) error {
			var err error
			rev, err = tx.Revision(ctx)
			return err
		}))
		require.NotEmpty(t, rev)
		return rev
	}
	update := func(fn func(tx state.Tx) error) {
		t.Helper()
		require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
			rev, err := tx.Revision(ctx)
			require.NoError(t, err)
			require.Empty(t, rev, "an Update reads no fixed state")
			return fn(tx)
		}))
	}

	seen := map[string]string{}
	after := func(what string) {
		t.Helper()
		rev := revision()
		require.Equal(t, rev, revision(), "after %s, with nothing committed since", what)
		if was, ok := seen[rev]; ok {
			require.Failf(t, "a revision came back", "after %s the revision is the one after %s", what, was)
		}
		seen[rev] = what
	}
	after("init")
	update(func(tx state.Tx) error { _, err := tx.Spores(ctx); return err })
	require.Contains(t, seen, revision(), "an Update that wrote nothing committed nothing")

	update(func(tx state.Tx) error { return tx.CreateSpore(ctx, Spore("one")) })
	after("a create")
	update(func(tx state.Tx) error { return tx.CreateSpore(ctx, Spore("two")) })
	after("another create")
	update(func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, "one")
		if err != nil {
			return err
		}
		w := sp.Wish
		w.Desired, w.Generation = state.Running, sp.Generation+1
		return tx.PutWish(ctx, w)
	})
	after("a wish")
	update(func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, "one")
		if err != nil {
			return err
		}
		st := sp.Status
		st.Health, st.ObservedGeneration = "Dead", sp.Generation
		return tx.PutStatus(ctx, "one", st)
	})
	after("a status")
	update(func(tx state.Tx) error {
		_, err := tx.Append(ctx, "two", []state.Event{{Kind: state.KindLifecycle, Action: "created", At: t0}})
		return err
	})
	after("an event")
	update(func(tx state.Tx) error {
		_, err := tx.Enqueue(ctx, state.OutboxEntry{ID: "m1", Spore: "two", From: "user:x", Text: "x", At: t0})
		return err
	})
	after("a queued message")
	update(func(tx state.Tx) error {
		set, err := tx.Settings(ctx)
		if err != nil {
			return err
		}
		set.Agent = "echo-" + set.Agent
		return tx.PutSettings(ctx, set)
	})
	after("the settings")
	update(func(tx state.Tx) error { return tx.DeleteSpore(ctx, "one") })
	after("a delete")

	// Within one View the revision is that View's, whatever commits.
	require.NoError(t, s.View(ctx, func(tx state.Tx) error {
		before, err := tx.Revision(ctx)
		require.NoError(t, err)
		update(func(tx state.Tx) error { return tx.CreateSpore(ctx, Spore("three")) })
		now, err := tx.Revision(ctx)
		require.NoError(t, err)
		require.Equal(t, before, now)
		return nil
	}))
	after("a create while a View was open")
}
