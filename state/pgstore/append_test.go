package pgstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/storetest"
)

// TestAppendStoresWhatItReturns: an Append of a few events (one
// statement) and of many (COPY, from 64) stores each event as Append
// returned it: numbered in order, a time given kept, one not given the
// transaction's (the same for all), lines and bytes as sent.
func TestAppendStoresWhatItReturns(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, storetest.Spore("one")) }))
	given := time.Date(2026, 11, 30, 9, 15, 0, 123456789, time.UTC)
	for _, n := range []int{1, 3, 70} {
		evs := make([]state.Event, n)
		for i := range evs {
			evs[i] = state.Event{Kind: state.KindMessage, Action: fmt.Sprintf("m-%d", i), From: "spore:a", Text: fmt.Sprintf("hi\x00%d", i)}
			if i%2 == 1 {
				evs[i] = state.Event{Kind: state.KindAgent, At: given, BridgeSeq: uint64(i), Line: []byte(fmt.Sprintf(`{"type":"assistant","n":%d}`, i))}
			}
		}
		var got []state.Event
		require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
			var err error
			got, err = tx.Append(ctx, "one", evs)
			return err
		}))
		require.Len(t, got, n)
		var stored []state.Event
		require.NoError(t, s.View(ctx, func(tx state.Tx) error {
			var err error
			stored, err = tx.Tail(ctx, "one", n)
			return err
		}))
		require.Equal(t, got, stored, "%d events", n)
		for i, e := range got {
			require.Equal(t, got[0].Seq+uint64(i), e.Seq, "numbered in order")
			if i%2 == 1 {
				require.True(t, e.At.Equal(state.Stamp(given)), "a time given is kept: %s", e.At)
			} else {
				require.True(t, e.At.Equal(got[0].At), "the transaction's time, one for all: %s", e.At)
			}
		}
	}
}
