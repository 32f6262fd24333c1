package dirstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/storetest"
)

// rangeAll is every row RangeSpores hands on in tx, copied.
func rangeAll(ctx context.Context, t state.Tx) ([]state.SporeRow, error) {
	var out []state.SporeRow
	err := t.(*tx).RangeSpores(ctx, func(r *state.SporeRow) error {
		sp := *r.Spore
		out = append(out, state.SporeRow{Spore: &sp, Head: r.Head, Outbox: append([]state.OutboxEntry(nil), r.Outbox...)})
		return nil
	})
	return out, err
}

// wholeRows is what the whole reads say of every spore in tx, in the
// shape RangeSpores hands it on.
func wholeRows(t *testing.T, ctx context.Context, tx state.Tx) []state.SporeRow {
	t.Helper()
	all, err := tx.Spores(ctx)
	require.NoError(t, err)
	var out []state.SporeRow
	for i := range all {
		id := all[i].ID
		h, err := tx.Head(ctx, id)
		require.NoError(t, err)
		q, err := tx.Outbox(ctx, id)
		require.NoError(t, err)
		dead, err := tx.DeadLetters(ctx, id)
		require.NoError(t, err)
		var ob []state.OutboxEntry
		if len(q)+len(dead) > 0 {
			// The row keeps the dead letters first here: the test buries
			// only the first entry of a queue.
			ob = append(append(ob, dead...), q...)
		}
		out = append(out, state.SporeRow{Spore: &all[i], Head: h, Outbox: ob})
	}
	return out
}

// RangeSpores hands on what the whole reads return, spore by spore in id
// order: from a snapshot read line by line (not read whole, and left so),
// from one read whole, under rows committed since the snapshot (created,
// changed, deleted, before, among and after its rows) and the
// transaction's own writes; it keeps no decoded row in the model.
func TestRangeSporesAsTheWholeReads(t *testing.T) {
	bisectSmall(t)
	ctx := context.Background()
	root := fleetStore(t, 600)
	// Committed since the snapshot: in the commit log, not state.json.
	st := openFresh(t, root, Options{})
	require.NoError(t, st.Update(ctx, func(tx state.Tx) error {
		for _, id := range []string{"a-first", "s-0300x", "z-last"} {
			if err := tx.CreateSpore(ctx, storetest.Spore(id)); err != nil {
				return err
			}
		}
		if err := tx.DeleteSpore(ctx, "s-0007"); err != nil {
			return err
		}
		if _, err := tx.Append(ctx, "s-0100", []state.Event{{Kind: state.KindLifecycle, Action: "x", Text: "one"}}); err != nil {
			return err
		}
		return tx.Bury(ctx, "s-0014", "m-s-0014", state.DeadLetter{Reason: "refused for good", At: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)})
	}))

	for _, name := range []string{"line by line", "read whole"} {
		t.Run(name, func(t *testing.T) {
			st := openFresh(t, root, Options{})
			m := st.cache.m
			if name == "read whole" {
				_, err := m.snapContent()
				require.NoError(t, err)
			}
			var got, want []state.SporeRow
			require.NoError(t, st.View(ctx, func(tx state.Tx) error {
				var err error
				got, err = rangeAll(ctx, tx)
				return err
			}))
			if name == "line by line" {
				require.False(t, m.snap.loaded, "the range reads the file, not the snapshot whole")
				require.Equal(t, len(m.rows), decodedRows(m), "and keeps no row of the snapshot decoded")
			}
			require.NoError(t, st.View(ctx, func(tx state.Tx) error { want = wholeRows(t, ctx, tx); return nil }))
			require.Len(t, got, 600-1+3)
			require.Equal(t, want, got)

			// Inside an Update, its own writes are what it ranges over.
			require.ErrorIs(t, st.Update(ctx, func(tx state.Tx) error {
				require.NoError(t, tx.CreateSpore(ctx, storetest.Spore("s-0001a")))
				require.NoError(t, tx.DeleteSpore(ctx, "s-0002"))
				got, err := rangeAll(ctx, tx)
				require.NoError(t, err)
				require.Equal(t, wholeRows(t, ctx, tx), got)
				return errRollback
			}), errRollback)
		})
	}
}

var errRollback = fmt.Errorf("roll back")

// A line of the snapshot that does not check ends the range with its
// damage, named by its line, after the rows before it; the store is not
// rewritten; an fn that fails ends the range with its error.
func TestRangeSporesStopsAtDamage(t *testing.T) {
	bisectSmall(t)
	ctx := context.Background()
	root := fleetStore(t, 300)
	n, off := rowLine(t, root, "s-0222")
	p := filepath.Join(root, snapshotFile)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	b[off+40] ^= 0x01
	require.NoError(t, os.WriteFile(p, b, 0o600))
	sums := fileSums(t, root)

	st := openFresh(t, root, Options{})
	var got []state.SporeRow
	err = st.View(ctx, func(tx state.Tx) error { got, err = rangeAll(ctx, tx); return err })
	ce := requireCorrupt(t, err, snapshotFile)
	require.Equal(t, n, ce.Line, "its line: %v", ce)
	require.Contains(t, ce.Reason, "checksum")
	_, isSpores := state.SporeDamage(err)
	require.True(t, isSpores)
	require.Len(t, got, 222, "the rows before it were handed on")
	require.Equal(t, sums, fileSums(t, root), "nothing rewritten")

	stop := fmt.Errorf("enough")
	seen := 0
	err = openFresh(t, root, Options{}).View(ctx, func(x state.Tx) error {
		return x.(*tx).RangeSpores(ctx, func(*state.SporeRow) error {
			seen++
			if seen == 3 {
				return stop
			}
			return nil
		})
	})
	require.ErrorIs(t, err, stop)
	require.Equal(t, 3, seen)
}
