// Package storetest is the contract every state.Store backend must meet.
// A backend's tests call Run with a function that returns a fresh, empty,
// initialised store; the same suite runs against the directory store and
// PostgreSQL so callers can never tell them apart.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// NewStore returns a fresh, initialised, empty store; it must arrange its
// own cleanup with t.Cleanup.
type NewStore func(t *testing.T) state.Store

// Run runs the whole contract suite.
func Run(t *testing.T, newStore NewStore) {
	tests := []struct {
		name string
		fn   func(*testing.T, state.Store)
	}{
		{"Empty", testEmpty},
		{"Settings", testSettings},
		{"CreateAndRead", testCreateAndRead},
		{"CreateRejects", testCreateRejects},
		{"PutWishAndStatus", testPutWishAndStatus},
		{"StaleWrites", testStaleWrites},
		{"ReadOnlyView", testReadOnlyView},
		{"RollbackOnError", testRollbackOnError},
		{"AppendSequence", testAppendSequence},
		{"AppendRejects", testAppendRejects},
		{"EventsPaging", testEventsPaging},
		{"Tail", testTail},
		{"LastEvents", testLastEvents},
		{"FindAction", testFindAction},
		{"Revision", testRevision},
		{"LockSpores", testLockSpores},
		{"ReadYourWrites", testReadYourWrites},
		{"HostileText", testHostileText},
		{"Outbox", testOutbox},
		{"Pending", testPending},
		{"DeadLetters", testDeadLetters},
		{"WishAndHealthBookkeeping", testBookkeeping},
		{"SwarmLoop", testSwarmLoop},
		{"IdleSleep", testIdleSleep},
		{"ColonySettings", testColonySettings},
		{"Schedules", testSchedules},
		{"ScheduleClaim", testScheduleClaim},
		{"Budgets", testBudgets},
		{"ActivityAndIncidents", testActivityAndIncidents},
		{"ModelGateway", testModelGateway},
		{"PodOptions", testPodOptions},
		{"OperatorTokens", testOperatorTokens},
		{"RecoverySettings", testRecoverySettings},
		{"Tokens", testTokens},
		{"DeleteSpore", testDeleteSpore},
		{"ReaderNotBlockedNorDirty", testReaderNotBlocked},
		{"ConcurrentAppends", testConcurrentAppends},
		{"CheckClean", testCheckClean},
		{"MissingSpore", testMissingSpore},
		{"TimePrecision", testTimePrecision},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			tc.fn(t, s)
			// Like bbolt's test helper: every test ends with a full
			// consistency check.
			rep, err := s.Check(t.Context())
			require.NoError(t, err)
			require.Empty(t, rep.Problems, "check after %s", tc.name)
		})
	}
}

var t0 = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

// Spore returns a valid spore named id.
func Spore(id string) state.Spore {
	return state.Spore{
		Wish: state.Wish{ID: id, Colony: "default", Rank: state.RankSpore, Desired: state.Paused, Spec: state.Spec{CPU: "2", Memory: "3Gi", Storage: "5Gi"}, Created: t0, Updated: t0},
	}
}

func create(t *testing.T, s state.Store, ids ...string) {
	t.Helper()
	err := s.Update(t.Context(), func(tx state.Tx) error {
		for _, id := range ids {
			if err := tx.CreateSpore(t.Context(), Spore(id)); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
}

func appendN(t *testing.T, s state.Store, id string, n int) []state.Event {
	t.Helper()
	var out []state.Event
	err := s.Update(t.Context(), func(tx state.Tx) error {
		evs := make([]state.Event, n)
		for i := range evs {
			evs[i] = state.Event{Kind: state.KindPrompt, From: "user:test", Text: fmt.Sprintf("prompt %d", i)}
		}
		var err error
		out, err = tx.Append(t.Context(), id, evs)
		return err
	})
	require.NoError(t, err)
	return out
}

func view[T any](t *testing.T, s state.Store, fn func(context.Context, state.Tx) (T, error)) T {
	t.Helper()
	var v T
	err := s.View(t.Context(), func(tx state.Tx) error {
		var err error
		v, err = fn(t.Context(), tx)
		return err
	})
	require.NoError(t, err)
	return v
}

// spore reads one spore in a View of its own.
func spore(t *testing.T, s state.Store, id string) state.Spore {
	t.Helper()
	return view(t, s, func(ctx context.Context, tx state.Tx) (state.Spore, error) { return tx.Spore(ctx, id) })
}

func testEmpty(t *testing.T, s state.Store) {
	spores := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Spore, error) { return tx.Spores(ctx) })
	require.Empty(t, spores)
	err := s.View(t.Context(), func(tx state.Tx) error {
		_, err := tx.Spore(t.Context(), "nope")
		return err
	})
	require.ErrorIs(t, err, state.ErrNotFound)
	require.NotEmpty(t, s.Info().Backend)
	require.Positive(t, s.Info().FormatVersion)
}

func testSettings(t *testing.T, s state.Store) {
	want := state.Settings{Runtime: "kube", Agent: "echo", Namespace: "spores", StorageClass: "fast", Image: "img:1",
		DefaultSpec: state.Spec{CPU: "1", Memory: "2Gi", Storage: "9Gi"},
		Recovery: state.RecoveryPolicy{BackoffInitial: state.Duration(5 * time.Second), BackoffMax: state.Duration(90 * time.Minute),
			BreakerFailures: 3, BreakerWindow: state.Duration(time.Hour + 30*time.Minute), HealthyAfter: state.Duration(1500 * time.Millisecond)}}
	require.NoError(t, s.Update(t.Context(), func(tx state.Tx) error {
		return tx.PutSettings(t.Context(), want)
	}))
	got := view(t, s, func(ctx context.Context, tx state.Tx) (state.Settings, error) { return tx.Settings(ctx) })
	require.Equal(t, want, got)
}

func testCreateAndRead(t *testing.T, s state.Store) {
	create(t, s, "zeta", "alpha", "mid-1")
	spores := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Spore, error) { return tx.Spores(ctx) })
	require.Len(t, spores, 3)
	require.Equal(t, []string{"alpha", "mid-1", "zeta"}, []string{spores[0].ID, spores[1].ID, spores[2].ID})
	got := view(t, s, func(ctx context.Context, tx state.Tx) (state.Spore, error) { return tx.Spore(ctx, "alpha") })
	want := Spore("alpha")
	require.True(t, want.Created.Equal(got.Created))
	got.Created, got.Updated = want.Created, want.Updated
	require.Equal(t, want, got)
	heads := view(t, s, func(ctx context.Context, tx state.Tx) (map[string]state.SporeHead, error) { return tx.Heads(ctx) })
	require.Len(t, heads, 3)
	require.Zero(t, heads["zeta"].LastSeq)
}

func testCreateRejects(t *testing.T, s state.Store) {
	create(t, s, "one")
	err := s.Update(t.Context(), func(tx state.Tx) error {
		return tx.CreateSpore(t.Context(), Spore("one"))
	})
	require.ErrorIs(t, err, state.ErrExists)

	bad := Spore("Bad_ID")
	err = s.Update(t.Context(), func(tx state.Tx) error { return tx.CreateSpore(t.Context(), bad) })
	var inv *state.InvalidError
	require.ErrorAs(t, err, &inv)
	spores := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Spore, error) { return tx.Spores(ctx) })
	require.Len(t, spores, 1)
}

// Put writes sp over the stored spore of its id as a test sets one up:
// its wish, when it differs, at a generation above the stored one (sp's
// own when that is higher), then its status at the wish's generation. It
// returns the spore as written. Code outside tests writes a wish through
// reconcile/wish and a status through a pass.
func Put(ctx context.Context, tx state.Tx, sp state.Spore) (state.Spore, error) {
	cur, err := tx.Spore(ctx, sp.ID)
	if err != nil {
		return sp, err
	}
	if !sameWish(sp.Wish, cur.Wish) {
		sp.Generation = max(sp.Generation, cur.Generation+1)
		if err := tx.PutWish(ctx, sp.Wish); err != nil {
			return sp, err
		}
	} else {
		sp.Generation = cur.Generation
	}
	sp.ObservedGeneration = sp.Generation
	return sp, tx.PutStatus(ctx, sp.ID, sp.Status)
}

// sameWish compares two wishes as the stores keep them (their JSON form):
// a wish holds maps and pointers (spec.pod), which == would compare by
// address.
func sameWish(a, b state.Wish) bool {
	x, errX := json.Marshal(a.Stamped())
	y, errY := json.Marshal(b.Stamped())
	return errX == nil && errY == nil && bytes.Equal(x, y)
}

// update reads spore id, lets fn change it and writes it back with Put.
func update(ctx context.Context, s state.Store, id string, fn func(*state.Spore)) error {
	return s.Update(ctx, func(tx state.Tx) error {
		cur, err := tx.Spore(ctx, id)
		if err != nil {
			return err
		}
		fn(&cur)
		_, err = Put(ctx, tx, cur)
		return err
	})
}

// testPutWishAndStatus: each write replaces its half and keeps the other.
func testPutWishAndStatus(t *testing.T, s state.Store) {
	ctx := t.Context()
	create(t, s, "one")
	get := func() state.Spore { return spore(t, s, "one") }
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, "one")
		if err != nil {
			return err
		}
		st := sp.Status
		st.Restarts, st.NotBefore, st.Health = 3, t0.Add(time.Minute), "Dead"
		return tx.PutStatus(ctx, "one", st)
	}))
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, "one")
		if err != nil {
			return err
		}
		w := sp.Wish
		w.Desired, w.Generation, w.Role, w.Swarm = state.Running, sp.Generation+1, "dev", "team"
		return tx.PutWish(ctx, w)
	}))
	got := get()
	require.Equal(t, state.Running, got.Desired)
	require.Equal(t, "dev", got.Role)
	require.Equal(t, uint64(1), got.Generation)
	require.Equal(t, 3, got.Restarts, "a wish write keeps the status")
	require.Equal(t, state.Health("Dead"), got.Health)
	require.True(t, got.NotBefore.Equal(t0.Add(time.Minute)))
	require.Zero(t, got.ObservedGeneration, "the status was written against generation 0")

	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		st := got.Status
		st.ObservedGeneration, st.Restarts = 1, 4
		return tx.PutStatus(ctx, "one", st)
	}))
	got = get()
	require.Equal(t, 4, got.Restarts)
	require.Equal(t, uint64(1), got.ObservedGeneration)
	require.Equal(t, state.Running, got.Desired, "a status write keeps the wish")
	spores := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Spore, error) { return tx.Spores(ctx) })
	require.Equal(t, got, spores[0])

	for name, write := range map[string]func(tx state.Tx) error{
		"PutWish":   func(tx state.Tx) error { w := Spore("ghost").Wish; w.Generation = 1; return tx.PutWish(ctx, w) },
		"PutStatus": func(tx state.Tx) error { return tx.PutStatus(ctx, "ghost", state.Status{}) },
	} {
		err := s.Update(ctx, write)
		require.ErrorIs(t, err, state.ErrNotFound, name)
		require.Equal(t, state.SporeNotFound("ghost").Error(), err.Error(), name)
	}
}

// testStaleWrites: a wish that does not raise the generation, and a
// status written against an older one, are refused with ErrStale and
// write nothing of their transaction; a status ahead of the wish is
// invalid. This is what keeps a pass that read generation G from writing
// over a wish a person made meanwhile.
func testStaleWrites(t *testing.T, s state.Store) {
	ctx := t.Context()
	create(t, s, "one")
	get := func() state.Spore { return spore(t, s, "one") }
	// A pass reads generation 0; a person wakes the spore (generation 1).
	observed := get()
	require.NoError(t, update(ctx, s, "one", func(sp *state.Spore) { sp.Desired = state.Running }))
	before := get()
	require.Equal(t, uint64(1), before.Generation)

	err := s.Update(ctx, func(tx state.Tx) error {
		if _, err := tx.Append(ctx, "one", []state.Event{{Kind: state.KindLifecycle, Text: "with the stale status"}}); err != nil {
			return err
		}
		st := observed.Status
		st.Restarts, st.BreakerOpen = 9, true
		return tx.PutStatus(ctx, "one", st)
	})
	var stale *state.StaleError
	require.ErrorAs(t, err, &stale)
	require.ErrorIs(t, err, state.ErrStale)
	require.Equal(t, "status", stale.What)
	require.Equal(t, uint64(0), stale.Written)
	require.Equal(t, uint64(1), stale.Stored)
	require.Contains(t, err.Error(), "spore one")

	err = s.Update(ctx, func(tx state.Tx) error {
		w := observed.Wish
		w.Desired, w.Generation = state.Stopped, 1 // not above the stored 1
		return tx.PutWish(ctx, w)
	})
	require.ErrorAs(t, err, &stale)
	require.Equal(t, "wish", stale.What)

	err = s.Update(ctx, func(tx state.Tx) error {
		st := before.Status
		st.ObservedGeneration = 2
		return tx.PutStatus(ctx, "one", st)
	})
	var inv *state.InvalidError
	require.ErrorAs(t, err, &inv)
	require.Equal(t, "observed generation", inv.Field)

	require.Equal(t, before, get(), "refused writes changed nothing")
	head := view(t, s, func(ctx context.Context, tx state.Tx) (state.SporeHead, error) { return tx.Head(ctx, "one") })
	require.Equal(t, uint64(0), head.LastSeq, "nor did the rest of their transaction")

	// CreateSpore refuses a status ahead of its wish.
	bad := Spore("two")
	bad.Generation, bad.ObservedGeneration = 1, 2
	err = s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, bad) })
	require.ErrorAs(t, err, &inv)
}

func testReadOnlyView(t *testing.T, s state.Store) {
	create(t, s, "one")
	ctx := t.Context()
	err := s.View(ctx, func(tx state.Tx) error {
		require.ErrorIs(t, tx.CreateSpore(ctx, Spore("two")), state.ErrReadOnly)
		_, err := tx.Append(ctx, "one", []state.Event{{Kind: state.KindPrompt, Text: "x"}})
		require.ErrorIs(t, err, state.ErrReadOnly)
		_, err = tx.Enqueue(ctx, state.OutboxEntry{ID: "m1", Spore: "one", From: "user:x", Text: "x"})
		require.ErrorIs(t, err, state.ErrReadOnly)
		require.ErrorIs(t, tx.DeleteSpore(ctx, "one"), state.ErrReadOnly)
		return nil
	})
	require.NoError(t, err)
	spores := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Spore, error) { return tx.Spores(ctx) })
	require.Len(t, spores, 1)
}

func testRollbackOnError(t *testing.T, s state.Store) {
	create(t, s, "one")
	appendN(t, s, "one", 2)
	boom := errors.New("boom")
	ctx := t.Context()
	err := s.Update(ctx, func(tx state.Tx) error {
		require.NoError(t, tx.CreateSpore(ctx, Spore("two")))
		_, err := tx.Append(ctx, "one", []state.Event{{Kind: state.KindPrompt, Text: "lost"}})
		require.NoError(t, err)
		_, err = tx.Enqueue(ctx, state.OutboxEntry{ID: "m1", Spore: "one", From: "user:x", Text: "lost"})
		require.NoError(t, err)
		return boom
	})
	require.ErrorIs(t, err, boom)
	spores := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Spore, error) { return tx.Spores(ctx) })
	require.Len(t, spores, 1)
	evs := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Event, error) { return tx.Events(ctx, "one", 0, 0) })
	require.Len(t, evs, 2)
	out := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.OutboxEntry, error) { return tx.Outbox(ctx, "one") })
	require.Empty(t, out)
	// The next append continues the sequence as if the failed one never was.
	next := appendN(t, s, "one", 1)
	require.Equal(t, uint64(3), next[0].Seq)
}

func testAppendSequence(t *testing.T, s state.Store) {
	create(t, s, "one", "two")
	a := appendN(t, s, "one", 3)
	b := appendN(t, s, "two", 2)
	c := appendN(t, s, "one", 2)
	require.Equal(t, []uint64{1, 2, 3}, seqs(a))
	require.Equal(t, []uint64{1, 2}, seqs(b))
	require.Equal(t, []uint64{4, 5}, seqs(c))
	for _, e := range a {
		require.False(t, e.At.IsZero(), "At is stamped")
	}
	evs := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Event, error) { return tx.Events(ctx, "one", 0, 0) })
	require.Equal(t, []uint64{1, 2, 3, 4, 5}, seqs(evs))
	require.Equal(t, "prompt 1", evs[1].Text)
	heads := view(t, s, func(ctx context.Context, tx state.Tx) (map[string]state.SporeHead, error) { return tx.Heads(ctx) })
	require.Equal(t, uint64(5), heads["one"].LastSeq)
	require.Equal(t, uint64(2), heads["two"].LastSeq)

	// Seq carried by the caller is ignored; At given by the caller is kept.
	at := t0.Add(time.Hour)
	var got []state.Event
	require.NoError(t, s.Update(t.Context(), func(tx state.Tx) error {
		var err error
		got, err = tx.Append(t.Context(), "two", []state.Event{{Seq: 99, At: at, Kind: state.KindAgent, BridgeSeq: 7, Line: []byte(`{"type":"assistant"}`)}})
		return err
	}))
	require.Equal(t, uint64(3), got[0].Seq)
	evs = view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Event, error) { return tx.Events(ctx, "two", 2, 0) })
	require.Len(t, evs, 1)
	require.True(t, evs[0].At.Equal(at))
	require.Equal(t, uint64(7), evs[0].BridgeSeq)
	require.JSONEq(t, `{"type":"assistant"}`, string(evs[0].Line))
}

func testAppendRejects(t *testing.T, s state.Store) {
	create(t, s, "one")
	ctx := t.Context()
	err := s.Update(ctx, func(tx state.Tx) error {
		_, err := tx.Append(ctx, "ghost", []state.Event{{Kind: state.KindPrompt, Text: "x"}})
		return err
	})
	require.ErrorIs(t, err, state.ErrNotFound)
	var inv *state.InvalidError
	err = s.Update(ctx, func(tx state.Tx) error {
		_, err := tx.Append(ctx, "one", []state.Event{{Kind: "nonsense"}})
		return err
	})
	require.ErrorAs(t, err, &inv)
	err = s.Update(ctx, func(tx state.Tx) error {
		_, err := tx.Append(ctx, "one", []state.Event{{Kind: state.KindAgent, Line: []byte(`{not json`)}})
		return err
	})
	require.ErrorAs(t, err, &inv)
	err = s.Update(ctx, func(tx state.Tx) error {
		_, err := tx.Append(ctx, "one", []state.Event{{Kind: state.KindPrompt, Text: "bad \xff utf8"}})
		return err
	})
	require.ErrorAs(t, err, &inv)
	evs := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Event, error) { return tx.Events(ctx, "one", 0, 0) })
	require.Empty(t, evs)
}

func testEventsPaging(t *testing.T, s state.Store) {
	create(t, s, "one")
	for i := 0; i < 5; i++ {
		appendN(t, s, "one", 20)
	}
	var all []uint64
	after := uint64(0)
	for {
		page := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Event, error) { return tx.Events(ctx, "one", after, 7) })
		if len(page) == 0 {
			break
		}
		require.LessOrEqual(t, len(page), 7)
		all = append(all, seqs(page)...)
		after = page[len(page)-1].Seq
	}
	require.Len(t, all, 100)
	for i, q := range all {
		require.Equal(t, uint64(i+1), q)
	}
	past := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Event, error) { return tx.Events(ctx, "one", 100, 0) })
	require.Empty(t, past)
	mid := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Event, error) { return tx.Events(ctx, "one", 57, 3) })
	require.Equal(t, []uint64{58, 59, 60}, seqs(mid))
}

func testTail(t *testing.T, s state.Store) {
	create(t, s, "one", "empty")
	appendN(t, s, "one", 30)
	tail := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Event, error) { return tx.Tail(ctx, "one", 4) })
	require.Equal(t, []uint64{27, 28, 29, 30}, seqs(tail))
	all := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Event, error) { return tx.Tail(ctx, "one", 100) })
	require.Len(t, all, 30)
	none := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Event, error) { return tx.Tail(ctx, "empty", 5) })
	require.Empty(t, none)
}

func testReadYourWrites(t *testing.T, s state.Store) {
	create(t, s, "one")
	ctx := t.Context()
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		require.NoError(t, tx.CreateSpore(ctx, Spore("two")))
		got, err := tx.Spore(ctx, "two")
		require.NoError(t, err)
		require.Equal(t, "two", got.ID)
		_, err = tx.Append(ctx, "two", []state.Event{{Kind: state.KindLifecycle, Action: "created"}})
		require.NoError(t, err)
		_, err = tx.Append(ctx, "two", []state.Event{{Kind: state.KindPrompt, Text: "hi"}})
		require.NoError(t, err)
		h, err := tx.Head(ctx, "two")
		require.NoError(t, err)
		require.Equal(t, uint64(2), h.LastSeq)
		evs, err := tx.Events(ctx, "two", 0, 0)
		require.NoError(t, err)
		require.Equal(t, []uint64{1, 2}, seqs(evs))
		tail, err := tx.Tail(ctx, "two", 1)
		require.NoError(t, err)
		require.Equal(t, "hi", tail[0].Text)
		require.NoError(t, tx.DeleteSpore(ctx, "one"))
		_, err = tx.Spore(ctx, "one")
		require.ErrorIs(t, err, state.ErrNotFound)
		return nil
	}))
}

func testHostileText(t *testing.T, s state.Store) {
	create(t, s, "one")
	texts := []string{
		`'; DROP TABLE events; --`,
		"quote \" backslash \\ newline \n tab \t",
		"nul \x00 byte",
		"emoji 🍄 and \u2028 separators",
		strings.Repeat("x", 1<<20),
	}
	ctx := t.Context()
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		evs := make([]state.Event, len(texts))
		for i, txt := range texts {
			evs[i] = state.Event{Kind: state.KindPrompt, From: "user:o'brien", Text: txt}
		}
		_, err := tx.Append(ctx, "one", evs)
		return err
	}))
	evs := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Event, error) { return tx.Events(ctx, "one", 0, 0) })
	require.Len(t, evs, len(texts))
	for i, txt := range texts {
		require.Equal(t, txt, evs[i].Text, "event %d", i+1)
		require.Equal(t, "user:o'brien", evs[i].From)
	}
}

func testOutbox(t *testing.T, s state.Store) {
	create(t, s, "one", "two")
	ctx := t.Context()
	var added []bool
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		for _, e := range []state.OutboxEntry{
			{ID: "m1", Spore: "one", From: "user:a", Text: "first", At: t0},
			{ID: "m2", Spore: "one", From: "spore:two", Text: "second", At: t0},
			{ID: "m1", Spore: "one", From: "user:a", Text: "first again", At: t0},
			{ID: "m1", Spore: "two", From: "user:a", Text: "other spore", At: t0, Wake: true},
		} {
			ok, err := tx.Enqueue(ctx, e)
			if err != nil {
				return err
			}
			added = append(added, ok)
		}
		return nil
	}))
	require.Equal(t, []bool{true, true, false, true}, added)
	out := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.OutboxEntry, error) { return tx.Outbox(ctx, "one") })
	require.Len(t, out, 2)
	require.Equal(t, "first", out[0].Text)
	require.Equal(t, "second", out[1].Text)
	other := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.OutboxEntry, error) { return tx.Outbox(ctx, "two") })
	require.Len(t, other, 1)
	require.True(t, other[0].Wake)

	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.Dequeue(ctx, "one", "m1") }))
	out = view(t, s, func(ctx context.Context, tx state.Tx) ([]state.OutboxEntry, error) { return tx.Outbox(ctx, "one") })
	require.Len(t, out, 1)
	require.Equal(t, "m2", out[0].ID)
	err := s.Update(ctx, func(tx state.Tx) error { return tx.Dequeue(ctx, "one", "m1") })
	require.ErrorIs(t, err, state.ErrNotFound)
	err = s.Update(ctx, func(tx state.Tx) error {
		_, err := tx.Enqueue(ctx, state.OutboxEntry{ID: "x", Spore: "ghost", From: "user:a", Text: "t"})
		return err
	})
	require.ErrorIs(t, err, state.ErrNotFound)
	// Order survives a later enqueue after a dequeue.
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		_, err := tx.Enqueue(ctx, state.OutboxEntry{ID: "m3", Spore: "one", From: "user:a", Text: "third", At: t0})
		return err
	}))
	out = view(t, s, func(ctx context.Context, tx state.Tx) ([]state.OutboxEntry, error) { return tx.Outbox(ctx, "one") })
	require.Equal(t, []string{"m2", "m3"}, []string{out[0].ID, out[1].ID})
}

func testTokens(t *testing.T, s state.Store) {
	create(t, s, "one")
	ctx := t.Context()
	err := s.View(ctx, func(tx state.Tx) error {
		_, err := tx.TokenHash(ctx, "one")
		return err
	})
	require.ErrorIs(t, err, state.ErrNotFound)
	tok, h, err := state.NewToken()
	require.NoError(t, err)
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.SetTokenHash(ctx, "one", h) }))
	got := view(t, s, func(ctx context.Context, tx state.Tx) (state.TokenHash, error) { return tx.TokenHash(ctx, "one") })
	require.True(t, got.Matches(tok))
	require.False(t, got.Matches(tok+"x"))
	var inv *state.InvalidError
	err = s.Update(ctx, func(tx state.Tx) error { return tx.SetTokenHash(ctx, "one", state.TokenHash(tok)) })
	require.ErrorAs(t, err, &inv, "a plaintext token is refused as a hash")
	err = s.Update(ctx, func(tx state.Tx) error { return tx.SetTokenHash(ctx, "ghost", h) })
	require.ErrorIs(t, err, state.ErrNotFound)
}

func testDeleteSpore(t *testing.T, s state.Store) {
	create(t, s, "one", "two")
	appendN(t, s, "one", 5)
	ctx := t.Context()
	_, h, _ := state.NewToken()
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		if _, err := tx.Enqueue(ctx, state.OutboxEntry{ID: "m", Spore: "one", From: "user:a", Text: "t"}); err != nil {
			return err
		}
		return tx.SetTokenHash(ctx, "one", h)
	}))
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.DeleteSpore(ctx, "one") }))
	err := s.Update(ctx, func(tx state.Tx) error { return tx.DeleteSpore(ctx, "one") })
	require.ErrorIs(t, err, state.ErrNotFound)
	spores := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Spore, error) { return tx.Spores(ctx) })
	require.Len(t, spores, 1)
	// A spore created again under the same id starts a fresh history.
	create(t, s, "one")
	evs := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Event, error) { return tx.Events(ctx, "one", 0, 0) })
	require.Empty(t, evs)
	out := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.OutboxEntry, error) { return tx.Outbox(ctx, "one") })
	require.Empty(t, out)
	err = s.View(ctx, func(tx state.Tx) error { _, err := tx.TokenHash(ctx, "one"); return err })
	require.ErrorIs(t, err, state.ErrNotFound)
	require.Equal(t, []uint64{1}, seqs(appendN(t, s, "one", 1)))
}

// testReaderNotBlocked holds a write transaction open and shows that a
// reader neither waits for it nor sees any of its writes.
func testReaderNotBlocked(t *testing.T, s state.Store) {
	create(t, s, "one")
	appendN(t, s, "one", 3)
	ctx := t.Context()
	inside := make(chan struct{})
	release := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- s.Update(ctx, func(tx state.Tx) error {
			if err := tx.CreateSpore(ctx, Spore("two")); err != nil {
				return err
			}
			if _, err := tx.Append(ctx, "one", []state.Event{{Kind: state.KindPrompt, Text: "pending"}}); err != nil {
				return err
			}
			close(inside)
			<-release
			return nil
		})
	}()
	<-inside
	readDone := make(chan struct{})
	var spores []state.Spore
	var evs []state.Event
	go func() {
		defer close(readDone)
		_ = s.View(ctx, func(tx state.Tx) error {
			spores, _ = tx.Spores(ctx)
			evs, _ = tx.Events(ctx, "one", 0, 0)
			return nil
		})
	}()
	select {
	case <-readDone:
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("a reader waited for a writer")
	}
	require.Len(t, spores, 1, "reader saw an uncommitted spore")
	require.Len(t, evs, 3, "reader saw an uncommitted event")
	close(release)
	require.NoError(t, <-done)
	spores = view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Spore, error) { return tx.Spores(ctx) })
	require.Len(t, spores, 2)
}

func testConcurrentAppends(t *testing.T, s state.Store) {
	ids := []string{"a", "b", "c"}
	create(t, s, ids...)
	const writers, rounds, batch = 6, 10, 5
	var wg sync.WaitGroup
	errs := make(chan error, writers*rounds)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				id := ids[(w+r)%len(ids)]
				err := s.Update(t.Context(), func(tx state.Tx) error {
					evs := make([]state.Event, batch)
					for i := range evs {
						evs[i] = state.Event{Kind: state.KindPrompt, From: fmt.Sprintf("w%d", w), Text: fmt.Sprintf("w%d r%d i%d", w, r, i)}
					}
					_, err := tx.Append(t.Context(), id, evs)
					return err
				})
				if err != nil {
					errs <- err
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	seen := map[string]bool{}
	total := 0
	for _, id := range ids {
		evs := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Event, error) { return tx.Events(ctx, id, 0, 0) })
		for i, e := range evs {
			require.Equal(t, uint64(i+1), e.Seq, "spore %s gapless", id)
			require.False(t, seen[e.Text], "duplicate %q", e.Text)
			seen[e.Text] = true
		}
		total += len(evs)
	}
	require.Equal(t, writers*rounds*batch, total)
}

func testCheckClean(t *testing.T, s state.Store) {
	create(t, s, "one", "two")
	appendN(t, s, "one", 10)
	rep, err := s.Check(t.Context())
	require.NoError(t, err)
	require.True(t, rep.OK(), "problems: %v", rep.Problems)
	require.Equal(t, 2, rep.Spores)
	require.Equal(t, uint64(10), rep.Events)
}

func seqs(evs []state.Event) []uint64 {
	out := make([]uint64, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	return out
}

func testMissingSpore(t *testing.T, s state.Store) {
	ctx := t.Context()
	reads := map[string]func(tx state.Tx) error{
		"Spore":       func(tx state.Tx) error { _, err := tx.Spore(ctx, "ghost"); return err },
		"Head":        func(tx state.Tx) error { _, err := tx.Head(ctx, "ghost"); return err },
		"Events":      func(tx state.Tx) error { _, err := tx.Events(ctx, "ghost", 0, 0); return err },
		"Tail":        func(tx state.Tx) error { _, err := tx.Tail(ctx, "ghost", 5); return err },
		"Outbox":      func(tx state.Tx) error { _, err := tx.Outbox(ctx, "ghost"); return err },
		"DeadLetters": func(tx state.Tx) error { _, err := tx.DeadLetters(ctx, "ghost"); return err },
		"TokenHash":   func(tx state.Tx) error { _, err := tx.TokenHash(ctx, "ghost"); return err },
	}
	// One wording in every backend, so a person (and a script) sees the
	// same message whatever the store.
	want := state.SporeNotFound("ghost").Error()
	for name, read := range reads {
		err := s.View(ctx, read)
		require.ErrorIs(t, err, state.ErrNotFound, name)
		if name != "TokenHash" {
			require.Equal(t, want, err.Error(), name)
		}
	}
	writes := map[string]func(tx state.Tx) error{
		"DeleteSpore": func(tx state.Tx) error { return tx.DeleteSpore(ctx, "ghost") },
		"Dequeue":     func(tx state.Tx) error { return tx.Dequeue(ctx, "ghost", "m") },
		"Bury":        func(tx state.Tx) error { return tx.Bury(ctx, "ghost", "m", state.DeadLetter{Reason: "r", At: t0}) },
	}
	for name, write := range writes {
		err := s.Update(ctx, write)
		require.ErrorIs(t, err, state.ErrNotFound, name)
		if name != "Dequeue" && name != "Bury" {
			require.Equal(t, want, err.Error(), name)
		}
	}
	err := s.Update(ctx, func(tx state.Tx) error {
		_, err := tx.Append(ctx, "ghost", []state.Event{{Kind: state.KindPrompt, Text: "x"}})
		return err
	})
	require.ErrorIs(t, err, state.ErrNotFound)
	require.Equal(t, want, err.Error(), "Append")
}

// testTimePrecision: times come back in UTC at state.Precision from every
// backend, and a zero time is stamped with the transaction's time.
func testTimePrecision(t *testing.T, s state.Store) {
	ctx := t.Context()
	at := time.Date(2026, 11, 2, 3, 4, 5, 123456789, time.FixedZone("X", 3600))
	sp := Spore("timed")
	sp.Created, sp.Updated = at, at
	before := time.Now().Add(-time.Second)
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		if err := tx.CreateSpore(ctx, sp); err != nil {
			return err
		}
		if _, err := tx.Append(ctx, "timed", []state.Event{{Kind: state.KindPrompt, At: at, Text: "x", From: "nul\x00from", Action: "nul\x00action"}}); err != nil {
			return err
		}
		_, err := tx.Enqueue(ctx, state.OutboxEntry{ID: "m1", Spore: "timed", From: "user:a", Text: "t"})
		return err
	}))
	want := at.UTC().Truncate(state.Precision)
	got := view(t, s, func(ctx context.Context, tx state.Tx) (state.Spore, error) { return tx.Spore(ctx, "timed") })
	require.Equal(t, want, got.Created.UTC())
	evs := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Event, error) { return tx.Events(ctx, "timed", 0, 0) })
	require.Equal(t, want, evs[0].At.UTC())
	// What Append returned is what a read returns.
	var appended []state.Event
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		var err error
		appended, err = tx.Append(ctx, "timed", []state.Event{{Kind: state.KindPrompt, At: at, Text: "y"}})
		return err
	}))
	require.Equal(t, want, appended[0].At.UTC())
	require.Equal(t, "nul\x00from", evs[0].From)
	require.Equal(t, "nul\x00action", evs[0].Action)
	out := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.OutboxEntry, error) { return tx.Outbox(ctx, "timed") })
	require.False(t, out[0].At.IsZero(), "Enqueue stamps a zero At")
	require.True(t, out[0].At.After(before))
	require.Equal(t, out[0].At, out[0].At.Truncate(state.Precision))
}

// testPending: one read returns every spore's queued entries in queue
// order, only for spores that have any, and agrees with Outbox; inside an
// Update it sees the transaction's own enqueues and dequeues.
func testPending(t *testing.T, s state.Store) {
	ctx := t.Context()
	pending := func() map[string][]state.OutboxEntry {
		return view(t, s, func(ctx context.Context, tx state.Tx) (map[string][]state.OutboxEntry, error) { return tx.Pending(ctx) })
	}
	require.Empty(t, pending(), "an empty store has nothing pending")
	create(t, s, "a", "b", "c", "d", "quiet")
	enqueue := func(tx state.Tx, spore string, ids ...string) error {
		for _, id := range ids {
			if _, err := tx.Enqueue(ctx, state.OutboxEntry{ID: id, Spore: spore, From: "user:a", Text: "to " + spore + " " + id, At: t0, Wake: id == "m3"}); err != nil {
				return err
			}
		}
		return nil
	}
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		for spore, ids := range map[string][]string{"a": {"m1", "m2", "m3"}, "b": {"x1"}, "c": {"y1", "y2"}, "d": {"z9", "z1"}} {
			if err := enqueue(tx, spore, ids...); err != nil {
				return err
			}
		}
		return nil
	}))
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		for _, q := range [][2]string{{"a", "m2"}, {"c", "y1"}, {"c", "y2"}} {
			if err := tx.Dequeue(ctx, q[0], q[1]); err != nil {
				return err
			}
		}
		if err := tx.DeleteSpore(ctx, "b"); err != nil {
			return err
		}
		return enqueue(tx, "a", "m4")
	}))
	ids := func(m map[string][]state.OutboxEntry) map[string][]string {
		out := map[string][]string{}
		for spore, es := range m {
			for _, e := range es {
				out[spore] = append(out[spore], e.ID)
			}
		}
		return out
	}
	got := pending()
	require.Equal(t, map[string][]string{"a": {"m1", "m3", "m4"}, "d": {"z9", "z1"}}, ids(got),
		"queue order, only spores with entries, none of a deleted spore")
	for spore, es := range got {
		out := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.OutboxEntry, error) { return tx.Outbox(ctx, spore) })
		require.Equal(t, out, es, "Pending and Outbox agree for %s", spore)
	}
	require.True(t, got["a"][1].Wake)
	require.Equal(t, "to a m1", got["a"][0].Text)
	require.Equal(t, "a", got["a"][0].Spore)
	require.True(t, got["a"][0].At.Equal(t0))

	// Inside an Update: read your writes, and nothing of them after a rollback.
	boom := errors.New("boom")
	err := s.Update(ctx, func(tx state.Tx) error {
		if err := enqueue(tx, "quiet", "q1"); err != nil {
			return err
		}
		if err := tx.Dequeue(ctx, "d", "z9"); err != nil {
			return err
		}
		if err := tx.Dequeue(ctx, "a", "m1"); err != nil {
			return err
		}
		if err := tx.Dequeue(ctx, "a", "m3"); err != nil {
			return err
		}
		if err := tx.Dequeue(ctx, "a", "m4"); err != nil {
			return err
		}
		p, err := tx.Pending(ctx)
		if err != nil {
			return err
		}
		require.Equal(t, map[string][]string{"d": {"z1"}, "quiet": {"q1"}}, ids(p))
		return boom
	})
	require.ErrorIs(t, err, boom)
	require.Equal(t, map[string][]string{"a": {"m1", "m3", "m4"}, "d": {"z9", "z1"}}, ids(pending()))

	// What Pending returns is the caller's to change.
	got["a"][0].Text = "changed"
	require.Equal(t, "to a m1", pending()["a"][0].Text)
}

// testBookkeeping: Generation, Health and HealthReason are stored exactly
// as given (the store never bumps the generation), and a pass that
// observed generation G sees a newer wish when it re-reads inside its
// commit.
func testBookkeeping(t *testing.T, s state.Store) {
	ctx := t.Context()
	sp := Spore("one")
	sp.Generation, sp.Health, sp.HealthReason = 7, "Dead", "OOMKilled"
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, sp) }))
	get := func() state.Spore { return spore(t, s, "one") }
	got := get()
	require.Equal(t, uint64(7), got.Generation)
	require.Equal(t, state.Health("Dead"), got.Health)
	require.Equal(t, "OOMKilled", got.HealthReason)
	spores := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Spore, error) { return tx.Spores(ctx) })
	require.Equal(t, uint64(7), spores[0].Generation)

	// Writes that do not change it leave it alone; the store adds nothing.
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		cur, err := tx.Spore(ctx, "one")
		if err != nil {
			return err
		}
		cur.Restarts++
		cur.Health, cur.HealthReason = "Healthy", ""
		cur.ObservedGeneration = cur.Generation
		return tx.PutStatus(ctx, "one", cur.Status)
	}))
	got = get()
	require.Equal(t, uint64(7), got.Generation, "the store does not bump the generation")
	require.Equal(t, state.Health("Healthy"), got.Health)
	require.Empty(t, got.HealthReason)

	// A pass observes generation 7; a command changes the wish meanwhile.
	observed := get().Generation
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		cur, err := tx.Spore(ctx, "one")
		if err != nil {
			return err
		}
		cur.Desired, cur.Generation = state.Running, cur.Generation+1
		return tx.PutWish(ctx, cur.Wish)
	}))
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		cur, err := tx.Spore(ctx, "one")
		if err != nil {
			return err
		}
		require.Greater(t, cur.Generation, observed, "the commit sees the newer wish")
		require.Equal(t, state.Running, cur.Desired)
		return nil
	}))

	// The largest generation both backends keep, and what they refuse.
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		cur, err := tx.Spore(ctx, "one")
		if err != nil {
			return err
		}
		cur.Generation = math.MaxInt64
		return tx.PutWish(ctx, cur.Wish)
	}))
	require.Equal(t, uint64(math.MaxInt64), get().Generation)
	for name, mutate := range map[string]func(*state.Spore){
		"generation past MaxInt64": func(sp *state.Spore) { sp.Generation = math.MaxInt64 + 1 },
		"health with a newline":    func(sp *state.Spore) { sp.Health = "Dead\nreally" },
		"reason with a NUL":        func(sp *state.Spore) { sp.HealthReason = "OOM\x00Killed" },
		"reason not UTF-8":         func(sp *state.Spore) { sp.HealthReason = "\xff" },
		"health too long":          func(sp *state.Spore) { sp.Health = state.Health(strings.Repeat("x", state.MaxHealthName+1)) },
		"health not a name":        func(sp *state.Spore) { sp.Health = "dead" },
		"reason too long":          func(sp *state.Spore) { sp.HealthReason = strings.Repeat("x", state.MaxHealthLen+1) },
	} {
		err := s.Update(ctx, func(tx state.Tx) error {
			cur, err := tx.Spore(ctx, "one")
			if err != nil {
				return err
			}
			mutate(&cur)
			_, err = Put(ctx, tx, cur)
			return err
		})
		var inv *state.InvalidError
		require.ErrorAs(t, err, &inv, name)
		bad := Spore("two")
		mutate(&bad)
		err = s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, bad) })
		require.ErrorAs(t, err, &inv, name)
	}
	require.Equal(t, uint64(math.MaxInt64), get().Generation)
	require.Len(t, view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Spore, error) { return tx.Spores(ctx) }), 1)
}

// testRecoverySettings: a policy round-trips field by field, the zero
// policy stays zero, and an invalid one is refused before anything is
// written.
func testRecoverySettings(t *testing.T, s state.Store) {
	ctx := t.Context()
	get := func() state.Settings {
		return view(t, s, func(ctx context.Context, tx state.Tx) (state.Settings, error) { return tx.Settings(ctx) })
	}
	base := get()
	require.Zero(t, base.Recovery, "a new store has the zero policy (all defaults)")
	for _, p := range []state.RecoveryPolicy{
		{BreakerFailures: 1},
		{BackoffInitial: state.Duration(time.Minute)},
		{BackoffInitial: state.Duration(time.Second), BackoffMax: state.Duration(time.Second), BreakerFailures: 10,
			BreakerWindow: state.Duration(24 * time.Hour), HealthyAfter: state.Duration(time.Nanosecond)},
		{},
	} {
		st := base
		st.Recovery = p
		require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.PutSettings(ctx, st) }))
		require.Equal(t, st, get())
	}
	good := base
	good.Recovery = state.RecoveryPolicy{BackoffInitial: state.Duration(time.Minute)}
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.PutSettings(ctx, good) }))
	for name, p := range map[string]state.RecoveryPolicy{
		"negative backoff":  {BackoffInitial: state.Duration(-time.Second)},
		"negative window":   {BreakerWindow: state.Duration(-time.Minute)},
		"negative failures": {BreakerFailures: -1},
		"max below initial": {BackoffInitial: state.Duration(time.Minute), BackoffMax: state.Duration(time.Second)},
	} {
		st := base
		st.Recovery = p
		err := s.Update(ctx, func(tx state.Tx) error { return tx.PutSettings(ctx, st) })
		var inv *state.InvalidError
		require.ErrorAs(t, err, &inv, name)
		require.True(t, strings.HasPrefix(inv.Field, "recovery."), "%s: field %q", name, inv.Field)
	}
	require.Equal(t, good, get(), "refused settings changed nothing")
}

// testSwarmLoop: a spore's Loop interval and LoopDue are stored exactly
// (LoopDue at the store's precision), cleared back to zero, and an
// interval out of bounds is refused with nothing written.
func testSwarmLoop(t *testing.T, s state.Store) {
	ctx := t.Context()
	sp := Spore("one")
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, sp) }))
	get := func() state.Spore { return spore(t, s, "one") }
	got := get()
	require.Zero(t, got.Loop)
	require.True(t, got.LoopDue.IsZero())

	due := time.Date(2026, 11, 1, 12, 30, 0, 123456789, time.UTC)
	require.NoError(t, update(ctx, s, "one", func(sp *state.Spore) { sp.Loop, sp.LoopDue = state.Duration(90*time.Minute), due }))
	got = get()
	require.Equal(t, state.Duration(90*time.Minute), got.Loop)
	require.True(t, got.LoopDue.Equal(state.Stamp(due)), "%s", got.LoopDue)
	spores := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Spore, error) { return tx.Spores(ctx) })
	require.Equal(t, state.Duration(90*time.Minute), spores[0].Loop)

	require.NoError(t, update(ctx, s, "one", func(sp *state.Spore) { sp.Loop, sp.LoopDue = 0, time.Time{} }))
	got = get()
	require.Zero(t, got.Loop)
	require.True(t, got.LoopDue.IsZero())

	for name, loop := range map[string]state.Duration{
		"under a minute": state.Duration(59 * time.Second),
		"over a day":     state.MaxLoop + 1,
		"negative":       -state.MinLoop,
	} {
		err := update(ctx, s, "one", func(sp *state.Spore) { sp.Loop = loop })
		var inv *state.InvalidError
		require.ErrorAs(t, err, &inv, name)
		require.Zero(t, get().Loop, name)
	}
}

// testActivityAndIncidents: a spore's hourly activity and its raised
// incidents are stored exactly, cleared back to none, and bad ones (an
// hour off the hour or out of order, a negative count, too many, a key
// with a control character) are refused with nothing written.
func testActivityAndIncidents(t *testing.T, s state.Store) {
	ctx := t.Context()
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, Spore("one")) }))
	get := func() state.Spore { return spore(t, s, "one") }
	got := get()
	require.Empty(t, got.Activity)
	require.Empty(t, got.Incidents)

	h := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	act := []state.HourActivity{
		{Hour: h, Turns: 2, ToolCalls: 7, InputTokens: 1200, OutputTokens: 340, CostMicros: 15_500},
		{Hour: h.Add(3 * time.Hour), Turns: 1, StoredBytes: 1 << 20}, // the ingest quota's count
	}
	inc := []state.Incident{{Key: "collision:src/a.go:s1,s2", At: state.Stamp(h.Add(90 * time.Second))}}
	require.NoError(t, update(ctx, s, "one", func(sp *state.Spore) { sp.Activity, sp.Incidents = act, inc }))
	got = get()
	require.Equal(t, act, got.Activity)
	require.Len(t, got.Incidents, 1)
	require.Equal(t, inc[0].Key, got.Incidents[0].Key)
	require.True(t, got.Incidents[0].At.Equal(inc[0].At))
	spores := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Spore, error) { return tx.Spores(ctx) })
	require.Equal(t, act, spores[0].Activity)

	many := make([]state.HourActivity, state.MaxActivity+1)
	for i := range many {
		many[i].Hour = h.Add(time.Duration(i) * time.Hour)
	}
	for name, fn := range map[string]func(*state.Spore){
		"off the hour":   func(sp *state.Spore) { sp.Activity = []state.HourActivity{{Hour: h.Add(time.Minute)}} },
		"out of order":   func(sp *state.Spore) { sp.Activity = []state.HourActivity{act[1], act[0]} },
		"negative":       func(sp *state.Spore) { sp.Activity = []state.HourActivity{{Hour: h, Turns: -1}} },
		"negative bytes": func(sp *state.Spore) { sp.Activity = []state.HourActivity{{Hour: h, StoredBytes: -1}} },
		"too many hours": func(sp *state.Spore) { sp.Activity = many },
		"empty key":      func(sp *state.Spore) { sp.Incidents = []state.Incident{{At: h}} },
		"control char":   func(sp *state.Spore) { sp.Incidents = []state.Incident{{Key: "a\nb", At: h}} },
	} {
		err := update(ctx, s, "one", fn)
		var inv *state.InvalidError
		require.ErrorAs(t, err, &inv, name)
		require.Equal(t, act, get().Activity, name)
	}

	require.NoError(t, update(ctx, s, "one", func(sp *state.Spore) { sp.Activity, sp.Incidents = nil, nil }))
	got = get()
	require.Empty(t, got.Activity)
	require.Empty(t, got.Incidents)
}

// testOperatorTokens: the settings' operator tokens are stored exactly,
// and a bad one (a hash that is not one, a name given twice) is refused
// by the store itself with the settings unchanged.
func testOperatorTokens(t *testing.T, s state.Store) {
	ctx := t.Context()
	get := func() state.Settings {
		return view(t, s, func(ctx context.Context, tx state.Tx) (state.Settings, error) { return tx.Settings(ctx) })
	}
	base := get()
	at := state.Stamp(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	ops := []state.OperatorToken{
		{Name: "alice", Hash: state.HashToken("spo_a"), Session: state.SessionHash(state.OperatorSessionKey("spo_a")), Created: at},
		{Name: "bob", Hash: state.HashToken("spo_b"), Session: state.SessionHash(state.OperatorSessionKey("spo_b")), Created: at.Add(time.Minute)},
	}
	put := func(st state.Settings) error {
		return s.Update(ctx, func(tx state.Tx) error { return tx.PutSettings(ctx, st) })
	}
	require.NoError(t, put(base.WithOperators(ops)))
	got := get().OperatorTokens()
	require.Len(t, got, 2)
	for i := range ops {
		require.Equal(t, ops[i].Name, got[i].Name)
		require.Equal(t, ops[i].Hash, got[i].Hash)
		require.Equal(t, ops[i].Session, got[i].Session)
		require.True(t, ops[i].Created.Equal(got[i].Created))
	}
	for name, bad := range map[string][]state.OperatorToken{
		"not a hash": {{Name: "carol", Hash: "spo_plaintext", Created: at}},
		"twice":      {ops[0], ops[0]},
	} {
		var inv *state.InvalidError
		require.ErrorAs(t, put(base.WithOperators(bad)), &inv, name)
		require.Len(t, get().OperatorTokens(), 2, name)
	}
	require.NoError(t, put(base.WithOperators(nil)))
	require.Empty(t, get().OperatorTokens())
}
