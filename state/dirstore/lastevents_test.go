package dirstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/storetest"
)

// LastEvents over more spores than one worker takes (inParallel) in a
// store opened afresh: the rows are decoded and the logs read on several
// goroutines at once (run with -race), and each spore gets its own last
// event.
func TestLastEventsInParallelOnAFreshStore(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, Options{})
	root := s.root
	const n = 1100
	ids := make([]string, n)
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		for i := range ids {
			ids[i] = fmt.Sprintf("s-%04d", i)
			if err := tx.CreateSpore(ctx, storetest.Spore(ids[i])); err != nil {
				return err
			}
			evs := []state.Event{{Kind: state.KindPrompt, Text: "first"}, {Kind: state.KindPrompt, Text: "last of " + ids[i]}}
			if _, err := tx.Append(ctx, ids[i], evs[:1+i%2]); err != nil {
				return err
			}
		}
		return nil
	}))
	require.NoError(t, s.compact(s.cache))
	require.NoError(t, s.Close())

	st, err := Open(ctx, root, Options{})
	require.NoError(t, err)
	defer st.Close()
	require.Zero(t, decodedRows(st.cache.m), "opening decodes nothing")
	var got map[string]state.Event
	require.NoError(t, st.View(ctx, func(tx state.Tx) error {
		got, err = tx.LastEvents(ctx, ids)
		return err
	}))
	require.Len(t, got, n)
	for i, id := range ids {
		want := "first"
		if i%2 == 1 {
			want = "last of " + id
		}
		require.Equal(t, want, got[id].Text, id)
		require.Equal(t, uint64(1+i%2), got[id].Seq, id)
	}
}
