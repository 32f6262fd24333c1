package cli

import (
	"context"
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// describeColony is a fake colony with a spore that has a bit of
// everything: a swarm, labels, a budget, a colony's sleep-after, a
// delivered prompt and one queued for a sleeping neighbour.
func describeColony(t *testing.T) *fakeColony {
	t.Helper()
	c := newFakeColony(t)
	c.ok("colony", "set", "lab", "--sleep-after", "30m", "--budget-tokens", "5000")
	c.ok("create", "w1", "--colony", "lab", "--swarm", "build", "--role", "tester", "--label", "team=core", "--wake")
	c.ok("set", "budget", "w1", "--tokens", "1000", "--cost", "2.50")
	c.ok("prompt", "w1", "hello", "--timeout", "5s")
	c.ok("create", "w2", "--colony", "lab")
	// A prompt queued for w2, asleep: enqueued as a message recorded for
	// a sleeping spore is, without the wake.
	ctx := context.Background()
	st, err := c.factory(nil, io.Discard, io.Discard).Store(ctx)
	require.NoError(t, err)
	defer st.Close()
	require.NoError(t, st.Update(ctx, func(tx state.Tx) error {
		_, err := tx.Enqueue(ctx, state.OutboxEntry{ID: "m1", Spore: "w2", From: "user:alice", Text: "wait for me", At: c.now})
		return err
	}))
	c.now = c.now.Add(90 * time.Second)
	return c
}

func TestDescribeShowsOneScreen(t *testing.T) {
	c := describeColony(t)
	// A prompt's id is random: the golden file holds it as p-ID.
	out := regexp.MustCompile(`p-[0-9a-f]{24}`).ReplaceAllString(c.ok("describe", "w1", "w2"), "p-ID")
	golden(t, "describe.table", out)
}

func TestDescribeStructured(t *testing.T) {
	c := describeColony(t)
	var doc struct {
		Spores []map[string]any `json:"spores"`
	}
	require.NoError(t, json.Unmarshal([]byte(c.ok("describe", "w1", "-o", "json")), &doc))
	require.Len(t, doc.Spores, 1)
	for _, k := range []string{"name", "wish", "status", "observed", "spend_today", "outbox", "next_schedule", "events"} {
		require.Contains(t, doc.Spores[0], k)
	}
}

// damagedRecordStore is a store in which one spore's record and log do
// not read, as a line edited after it was written.
type damagedRecordStore struct {
	state.Store
	id string
}

func (s damagedRecordStore) View(ctx context.Context, fn func(state.Tx) error) error {
	return s.Store.View(ctx, func(tx state.Tx) error { return fn(damagedRecordTx{Tx: tx, id: s.id}) })
}

func (s damagedRecordStore) Update(ctx context.Context, fn func(state.Tx) error) error {
	return s.Store.Update(ctx, func(tx state.Tx) error { return fn(damagedRecordTx{Tx: tx, id: s.id}) })
}

type damagedRecordTx struct {
	state.Tx
	id string
}

func (t damagedRecordTx) damage() error {
	return &state.CorruptError{File: "state.json", Line: 3, Reason: "checksum mismatch (the line was torn or edited)"}
}

func (t damagedRecordTx) Spore(ctx context.Context, id string) (state.Spore, error) {
	if id == t.id {
		return state.Spore{}, t.damage()
	}
	return t.Tx.Spore(ctx, id)
}

func (t damagedRecordTx) Tail(ctx context.Context, id string, n int) ([]state.Event, error) {
	if id == t.id {
		return nil, t.damage()
	}
	return t.Tx.Tail(ctx, id, n)
}

// A spore whose record is damaged is still described: Error with the
// damage named as its reason, its wish and events unreadable, and the
// spore beside it described as usual.
func TestDescribeDamagedSpore(t *testing.T) {
	c := newFakeColony(t)
	c.ok("create", "w1")
	c.ok("create", "w2")
	c.wrap = func(st state.Store) state.Store { return damagedRecordStore{Store: st, id: "w1"} }

	r := c.run("", "describe", "w1", "w2")
	require.Equal(t, ExitOK, r.code, r.err)
	one, two, ok := strings.Cut(r.out, "\n\nName:")
	require.True(t, ok, r.out)
	require.Contains(t, one, "Name:            w1")
	require.Contains(t, one, "Wish:            <unreadable: see the reason>")
	require.Regexp(t, `Effective:\s+Error`, one)
	require.Regexp(t, `Reason:\s+.*state.json:3`, one)
	require.Contains(t, one, "Events:  <unreadable: ")
	require.Contains(t, two, "w2")
	require.Regexp(t, `Effective:\s+Paused`, two)

	out := c.ok("describe", "w1", "-o", "json")
	require.Contains(t, out, `"wish": null`)
	require.Contains(t, out, `"events_error": "`)
}

// Missing ids: the others are described, then exit 4 naming the missing;
// bad --events is a usage error.
func TestDescribeMissingAndUsage(t *testing.T) {
	store := fixture(t)
	r := run(t, store, "describe", "worker-7", "nope")
	require.Equal(t, ExitNotFound, r.code, r.err)
	require.Contains(t, r.out, "Name:            worker-7")
	require.Contains(t, r.err, "nope")

	r = run(t, store, "describe", "nope")
	require.Equal(t, ExitNotFound, r.code, r.err)
	require.Empty(t, r.out)

	for _, args := range [][]string{{"describe"}, {"describe", "worker-7", "--events", "-1"}, {"describe", "worker-7", "--events", "1001"}} {
		r = run(t, store, args...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", args, r.err)
	}
	r = run(t, store, "describe", "worker-7", "--events", "0")
	require.Equal(t, ExitOK, r.code, r.err)
	require.Contains(t, r.out, "Events:  <none>")
}

// wholeReadStore counts the reads of every record (Tx.Spores), which
// describe of a few spores must not make: at 10,000 spores it is what
// makes a command slow.
type wholeReadStore struct {
	state.Store
	whole *int
}

func (s wholeReadStore) View(ctx context.Context, fn func(state.Tx) error) error {
	return s.Store.View(ctx, func(tx state.Tx) error { return fn(wholeReadTx{Tx: tx, whole: s.whole}) })
}

func (s wholeReadStore) Update(ctx context.Context, fn func(state.Tx) error) error {
	return s.Store.Update(ctx, func(tx state.Tx) error { return fn(wholeReadTx{Tx: tx, whole: s.whole}) })
}

type wholeReadTx struct {
	state.Tx
	whole *int
}

func (t wholeReadTx) Spores(ctx context.Context) ([]state.Spore, error) {
	*t.whole++
	return t.Tx.Spores(ctx)
}

// describe ID observes the named spore alone, once, and reads no other
// spore's record: the pass status ID runs.
func TestDescribeObservesTheNamedOnly(t *testing.T) {
	c := newFakeColony(t)
	for _, id := range []string{"w1", "w2", "w3"} {
		c.ok("create", id, "--wake")
	}
	whole := 0
	c.wrap = func(st state.Store) state.Store { return wholeReadStore{Store: st, whole: &whole} }
	before := c.rt.Calls("Observe")
	c.ok("describe", "w2")
	require.Equal(t, 1, c.rt.Calls("Observe")-before, "one observation")
	require.Equal(t, []string{"w2"}, c.rt.LastObserved(), "of the named spore only")
	require.Zero(t, whole, "no read of every record")
}
