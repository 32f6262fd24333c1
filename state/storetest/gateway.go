package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// The model gateway's record (state.GatewayRecord): serve counts each
// model call through state.CountModelCall, once when the upstream's
// answer starts (its usage so far) and again when it ends, and the two
// reports of one call, or the reports of two serve replicas, must count
// it once.

// gwNow is when the cases count, 10:05 UTC: its hour is 10:00.
var gwNow = time.Date(2026, 12, 7, 10, 5, 0, 0, time.UTC)

// callStart and callEnd are one call's usage as the upstream answers it
// at message_start and then at message_delta: the end's counts only grow.
var (
	callStart = state.Usage{InputTokens: 1000, CacheCreationTokens: 200, CacheReadTokens: 5000, OutputTokens: 1, CostMicros: 4000}
	callEnd   = state.Usage{InputTokens: 1000, CacheCreationTokens: 200, CacheReadTokens: 5000, OutputTokens: 350, CostMicros: 9250}
)

// count counts one report of call id of spore in a transaction of its
// own and returns what it added.
func count(ctx context.Context, s state.Store, spore, id string, u state.Usage, now time.Time) (state.Usage, error) {
	var added state.Usage
	err := s.Update(ctx, func(tx state.Tx) error {
		var err error
		added, err = state.CountModelCall(ctx, tx, spore, id, u, now)
		return err
	})
	return added, err
}

// testModelGateway: a call's start counts it whole, a report of the same
// again adds nothing, its end adds only what it has beyond the start, in
// the hour the call was first counted; every reader sees the same
// record; a pass's status write and a wish write keep it; a count that
// is refused or rolled back writes nothing; the record stays bounded; a
// spore created with a record holds it.
func testModelGateway(t *testing.T, s state.Store) {
	ctx := t.Context()
	create(t, s, "one", "two")
	record := func(id string) state.GatewayRecord { return spore(t, s, id).GatewayRecord }
	require.Zero(t, record("one"))

	added, err := count(ctx, s, "one", "msg_1", callStart, gwNow)
	require.NoError(t, err)
	require.Equal(t, callStart, added, "a new call is counted whole")
	added, err = count(ctx, s, "one", "msg_1", callStart, gwNow.Add(time.Second))
	require.NoError(t, err)
	require.Zero(t, added, "the same report again adds nothing")
	// The end arrives in the next hour: it stays the hour of the call.
	added, err = count(ctx, s, "one", "msg_1", callEnd, gwNow.Add(time.Hour))
	require.NoError(t, err)
	require.Equal(t, state.Usage{OutputTokens: 349, CostMicros: 5250}, added, "the end adds only what it has beyond the start")
	added, err = count(ctx, s, "one", "msg_1", callStart, gwNow.Add(time.Hour))
	require.NoError(t, err)
	require.Zero(t, added, "a late start of a counted call adds nothing")

	hour := gwNow.Truncate(time.Hour)
	want := state.GatewayRecord{
		ModelUsage: []state.HourUsage{{Hour: hour, Calls: 1, Usage: callEnd}},
		ModelCalls: []state.CountedCall{{ID: "msg_1", Hour: hour, Usage: callEnd}},
	}
	require.Equal(t, want, record("one"))
	require.Equal(t, state.Spend{Tokens: 1550, CostMicros: 9250}, record("one").CountedOn(gwNow).Spend(),
		"input, cache creation and output tokens, as budgets count")
	all := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Spore, error) { return tx.Spores(ctx) })
	require.Equal(t, want, all[0].GatewayRecord, "a whole read agrees")
	require.Zero(t, all[1].GatewayRecord, "another spore's record is its own")

	// A pass writes the status afterwards (another change), and a person
	// the wish: the count is kept by both.
	err = updateStatus(ctx, s, "one", func(st *state.Status) { st.Restarts, st.Health = 2, "Dead" })
	require.NoError(t, err)
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, "one")
		if err != nil {
			return err
		}
		w := sp.Wish
		w.Generation, w.Desired = sp.Generation+1, state.Running
		return tx.PutWish(ctx, w)
	}))
	got := spore(t, s, "one")
	require.Equal(t, want, got.GatewayRecord)
	require.Equal(t, 2, got.Restarts)

	// A second call an hour later is its own hour's.
	next := state.Usage{InputTokens: 10, OutputTokens: 5, CostMicros: 100}
	_, err = count(ctx, s, "one", "msg_2", next, gwNow.Add(time.Hour))
	require.NoError(t, err)
	want.ModelUsage = append(want.ModelUsage, state.HourUsage{Hour: hour.Add(time.Hour), Calls: 1, Usage: next})
	want.ModelCalls = append(want.ModelCalls, state.CountedCall{ID: "msg_2", Hour: hour.Add(time.Hour), Usage: next})
	require.Equal(t, want, record("one"))
	require.Equal(t, callEnd.Add(next), record("one").CountedOn(gwNow))

	// Refusals and a rollback write nothing.
	_, err = count(ctx, s, "ghost", "msg_3", next, gwNow)
	require.ErrorIs(t, err, state.ErrNotFound)
	for _, id := range []string{"", "has space", "é"} {
		_, err = count(ctx, s, "one", id, next, gwNow)
		var inv *state.InvalidError
		require.ErrorAs(t, err, &inv, "%q", id)
	}
	errAfter := fmt.Errorf("the answer never reached the spore")
	err = s.Update(ctx, func(tx state.Tx) error {
		if _, err := state.CountModelCall(ctx, tx, "one", "msg_3", next, gwNow); err != nil {
			return err
		}
		return errAfter
	})
	require.ErrorIs(t, err, errAfter)
	require.Equal(t, want, record("one"), "nothing written")

	// The record remembers the latest calls only; the hours count them
	// all.
	for i := range state.MaxCountedCalls {
		_, err := count(ctx, s, "two", fmt.Sprintf("msg_%03d", i), next, gwNow)
		require.NoError(t, err)
	}
	_, err = count(ctx, s, "two", "msg_last", next, gwNow)
	require.NoError(t, err)
	two := record("two")
	require.Len(t, two.ModelCalls, state.MaxCountedCalls)
	require.Equal(t, "msg_001", two.ModelCalls[0].ID, "the oldest call is forgotten")
	require.Equal(t, "msg_last", two.ModelCalls[state.MaxCountedCalls-1].ID)
	require.Equal(t, int64(state.MaxCountedCalls+1), two.ModelUsage[0].Calls)

	// A spore created with a record (a copy between stores,
	// state/storecopy) holds it as given.
	copied := Spore("three")
	copied.GatewayRecord = want
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, copied) }))
	require.Equal(t, want, record("three"))
}

// updateStatus is a pass's status write: state.UpdateStatus in a
// transaction of its own.
func updateStatus(ctx context.Context, s state.Store, id string, fn func(*state.Status)) error {
	return s.Update(ctx, func(tx state.Tx) error {
		_, err := state.UpdateStatus(ctx, tx, id, func(_ state.Spore, st *state.Status) error { fn(st); return nil })
		return err
	})
}

// Reopen opens another handle on the store a NewShared made; it must
// arrange its own cleanup with t.Cleanup.
type Reopen func(t *testing.T) state.Store

// NewShared returns a fresh, initialised, empty store and how to open
// another handle on it (another process, a second serve replica).
type NewShared func(t *testing.T) (state.Store, Reopen)

// RunShared runs the cases of the contract that need two handles on one
// store.
func RunShared(t *testing.T, newShared NewShared) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, state.Store, Reopen)
	}{
		{"ModelGatewayReopen", testModelGatewayReopen},
		{"ModelGatewayReplicas", testModelGatewayReplicas},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, reopen := newShared(t)
			tc.fn(t, s, reopen)
			rep, err := s.Check(t.Context())
			require.NoError(t, err)
			require.Empty(t, rep.Problems, "check after %s", tc.name)
		})
	}
}

// testModelGatewayReopen: what one handle counted, another handle opened
// afterwards reads, and its count of the same call's end adds only the
// difference, which the first handle then reads.
func testModelGatewayReopen(t *testing.T, s state.Store, reopen Reopen) {
	ctx := t.Context()
	create(t, s, "one")
	_, err := count(ctx, s, "one", "msg_1", callStart, gwNow)
	require.NoError(t, err)
	o := reopen(t)
	require.Equal(t, callStart, spore(t, o, "one").CountedOn(gwNow), "the count survives a reopen")
	added, err := count(ctx, o, "one", "msg_1", callEnd, gwNow)
	require.NoError(t, err)
	require.Equal(t, callEnd.Beyond(callStart), added)
	require.Equal(t, callEnd, spore(t, s, "one").CountedOn(gwNow), "the first handle reads the second's count")
}

// testModelGatewayReplicas: two handles (two serve replicas) report the
// same calls at once, each call's start and end by both, each report in
// a transaction of its own: every call is counted once, and what the
// reports added sums to exactly that.
func testModelGatewayReplicas(t *testing.T, s state.Store, reopen Reopen) {
	ctx := t.Context()
	create(t, s, "one")
	const calls = 24
	handles := []state.Store{s, reopen(t)}
	var (
		mu    sync.Mutex
		total state.Usage
		wg    sync.WaitGroup
		errs  = make([]error, 2*len(handles))
	)
	for h, hs := range handles {
		// Two goroutines per handle, one walking the calls forwards and
		// one backwards, so the two handles meet on every call.
		for dir := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := range calls {
					i := k
					if dir == 1 {
						i = calls - 1 - k
					}
					id := fmt.Sprintf("msg_%02d", i)
					for _, u := range []state.Usage{callStart, callEnd} {
						added, err := count(ctx, hs, "one", id, u, gwNow)
						if err != nil {
							errs[2*h+dir] = fmt.Errorf("handle %d counting %s: %w", h, id, err)
							return
						}
						mu.Lock()
						total = total.Add(added)
						mu.Unlock()
					}
				}
			}()
		}
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	var want state.Usage
	for range calls {
		want = want.Add(callEnd)
	}
	r := spore(t, handles[1], "one").GatewayRecord
	require.Equal(t, want, total, "the reports added each call once")
	require.Equal(t, want, r.CountedOn(gwNow))
	require.Equal(t, []state.HourUsage{{Hour: gwNow.Truncate(time.Hour), Calls: calls, Usage: want}}, r.ModelUsage)
	require.Len(t, r.ModelCalls, calls)
	for _, c := range r.ModelCalls {
		require.Equal(t, callEnd, c.Usage, c.ID)
	}
}
