package dirstore

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/storetest"
)

// decodedRows counts the rows of m's snapshot that have been decoded,
// and the rows committed since.
func decodedRows(m *model) int {
	n := len(m.rows)
	s := m.snap
	s.mu.Lock()
	defer s.mu.Unlock()
	rows := s.found
	if s.loaded {
		rows = s.all.lazy
	}
	for _, l := range rows {
		if l != nil && (l.r != nil || l.err != nil) {
			n++
		}
	}
	return n
}

// A store opened afresh decodes no row; a read of one spore decodes that
// row alone; a read of the fleet decodes them all. What the model needs
// of every row (ids, sorted; log names; who has an outbox) comes from the
// lines.
func TestRowsAreDecodedOnFirstRead(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, Options{})
	root := s.root
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		for i := range 500 {
			if err := tx.CreateSpore(ctx, storetest.Spore(fmt.Sprintf("s-%03d", i))); err != nil {
				return err
			}
		}
		_, err := tx.Enqueue(ctx, state.OutboxEntry{ID: "m-1", Spore: "s-007", From: "user:ann", Text: "hi"})
		return err
	}))
	require.NoError(t, s.compact(s.cache))
	require.NoError(t, s.Close())

	st, err := Open(ctx, root, Options{})
	require.NoError(t, err)
	defer st.Close()
	m := st.cache.m
	require.Zero(t, decodedRows(m), "opening decodes nothing")
	require.NotNil(t, m.snap.f, "a snapshot of %d bytes is not read whole at open", m.snap.size)
	require.NoError(t, st.View(ctx, func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, "s-042")
		require.NoError(t, err)
		require.Equal(t, "s-042", sp.ID)
		p, err := tx.Pending(ctx)
		require.NoError(t, err)
		require.Len(t, p["s-007"], 1, "the outbox index, from the lines")
		return nil
	}))
	require.Equal(t, 2, decodedRows(m), "s-042 read, s-007's outbox read")
	require.True(t, m.snap.loaded, "Pending read the lines of the whole snapshot")
	require.NoError(t, st.View(ctx, func(tx state.Tx) error {
		all, err := tx.Spores(ctx)
		require.Len(t, all, 500)
		return err
	}))
	require.Equal(t, 500, decodedRows(m), "the fleet read")
}

// A row whose line's CRC holds but which does not decode is refused by
// every read of that spore, naming the line, while the other spores are
// read as ever; check reports it, and nothing is rewritten.
func TestARowThatDoesNotDecodeIsRefusedWhenRead(t *testing.T) {
	ctx := context.Background()
	root := populated(t)
	// Beta's row is line 3; its status is made a list, which no row has.
	reframe(t, filepath.Join(root, snapshotFile), 3, func(p []byte) []byte {
		require.Contains(t, string(p), `"id":"beta"`)
		return []byte(strings.Replace(string(p), `},"status":{`, `},"status":{"restarts":"many",`, 1))
	})
	sums := fileSums(t, root)
	st, err := Open(ctx, root, Options{})
	require.NoError(t, err, "the line's CRC holds: the store opens")
	defer st.Close()
	err = st.View(ctx, func(tx state.Tx) error { _, err := tx.Spore(ctx, "beta"); return err })
	ce := requireCorrupt(t, err, snapshotFile)
	require.Equal(t, 3, ce.Line)
	// A whole read returns the others and names beta's damage: one
	// spore's damage is not every reader's.
	var all []state.Spore
	err = st.View(ctx, func(tx state.Tx) (err error) { all, err = tx.Spores(ctx); return err })
	requireCorrupt(t, err, snapshotFile)
	var d *state.DamagedError
	require.ErrorAs(t, err, &d)
	require.Equal(t, []string{"beta"}, d.IDs())
	require.Equal(t, 3, d.Spores["beta"].Line)
	require.Equal(t, []string{"alpha", "gamma"}, []string{all[0].ID, all[1].ID})
	require.Len(t, all, 2)
	var heads map[string]state.SporeHead
	err = st.View(ctx, func(tx state.Tx) (err error) { heads, err = tx.Heads(ctx); return err })
	require.ErrorAs(t, err, &d)
	require.Contains(t, heads, "alpha")
	require.NotContains(t, heads, "beta")
	require.NoError(t, st.View(ctx, func(tx state.Tx) error { _, err := tx.Spore(ctx, "alpha"); return err }), "another spore reads as ever")
	rep, err := st.Check(ctx)
	require.NoError(t, err)
	requireProblem(t, rep, snapshotFile+":3")
	require.Equal(t, sums, fileSums(t, root))
}
