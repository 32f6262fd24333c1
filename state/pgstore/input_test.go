package pgstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/storetest"
)

// TestHostileInput goes past the contract's HostileText: 10 MiB texts,
// NUL bytes where a text column cannot hold them, and JSON lines that
// jsonb would rewrite, each stored exactly or refused with InvalidError
// before anything is written.
func TestHostileInput(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, storetest.Spore("one")) }))

	big := strings.Repeat("🍄'\"\\\x00", 10<<20/9)
	lines := []string{
		`{"b":1,  "a":"\u0000 kept as written"}`,
		`"not json from the agent"`,
		`{"sql":"'); DROP TABLE sporectl.events; --"}`,
	}
	evs := []state.Event{{Kind: state.KindPrompt, From: "user:x", Text: big}}
	for _, l := range lines {
		evs = append(evs, state.Event{Kind: state.KindAgent, Line: []byte(l)})
	}
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { _, err := tx.Append(ctx, "one", evs); return err }))
	var got []state.Event
	require.NoError(t, s.View(ctx, func(tx state.Tx) error {
		var err error
		got, err = tx.Events(ctx, "one", 0, 0)
		return err
	}))
	require.Len(t, got, 1+len(lines))
	require.Equal(t, big, got[0].Text, "10 MiB with NUL bytes round-trips")
	for i, l := range lines {
		require.Equal(t, l, string(got[i+1].Line), "line stored byte for byte")
	}

	refused := []struct {
		name string
		fn   func(tx state.Tx) error
	}{
		{"invalid UTF-8 in from", func(tx state.Tx) error {
			_, err := tx.Append(ctx, "one", []state.Event{{Kind: state.KindPrompt, From: "user:\xfe", Text: "x"}})
			return err
		}},
		{"invalid UTF-8 in outbox text", func(tx state.Tx) error {
			_, err := tx.Enqueue(ctx, state.OutboxEntry{ID: "m", Spore: "one", From: "user:x", Text: "\xc3\x28"})
			return err
		}},
		{"outbox id with a space", func(tx state.Tx) error {
			_, err := tx.Enqueue(ctx, state.OutboxEntry{ID: "a b", Spore: "one", From: "user:x", Text: "x"})
			return err
		}},
		{"empty outbox id", func(tx state.Tx) error {
			_, err := tx.Enqueue(ctx, state.OutboxEntry{Spore: "one", From: "user:x", Text: "x"})
			return err
		}},
		{"NUL in spec", func(tx state.Tx) error {
			sp := storetest.Spore("two")
			sp.Spec.Image = "img\x00:1"
			return tx.CreateSpore(ctx, sp)
		}},
		{"desired state not spelled as in the model", func(tx state.Tx) error {
			sp := storetest.Spore("two")
			sp.Desired = "running"
			return tx.CreateSpore(ctx, sp)
		}},
		{"NUL in settings", func(tx state.Tx) error {
			return tx.PutSettings(ctx, state.Settings{Runtime: "lo\x00cal"})
		}},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Update(ctx, tc.fn)
			var inv *state.InvalidError
			require.ErrorAs(t, err, &inv)
		})
	}

	// NUL and quotes in senders, actions and outbox texts are stored
	// exactly too.
	text := "it's \"fine\" \x00 really"
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		if _, err := tx.Append(ctx, "one", []state.Event{{Kind: state.KindLifecycle, Action: "a\x00b", From: "user:\x00"}}); err != nil {
			return err
		}
		_, err := tx.Enqueue(ctx, state.OutboxEntry{ID: "';--", Spore: "one", From: "user:o'brien\x00", Text: text})
		return err
	}))
	var tail []state.Event
	require.NoError(t, s.View(ctx, func(tx state.Tx) error { var err error; tail, err = tx.Tail(ctx, "one", 1); return err }))
	require.Equal(t, "a\x00b", tail[0].Action)
	require.Equal(t, "user:\x00", tail[0].From)
	var out []state.OutboxEntry
	require.NoError(t, s.View(ctx, func(tx state.Tx) error {
		var err error
		out, err = tx.Outbox(ctx, "one")
		return err
	}))
	require.Len(t, out, 1)
	require.Equal(t, text, out[0].Text)
	require.Equal(t, "';--", out[0].ID)
	require.Equal(t, "user:o'brien\x00", out[0].From)
}

// TestSwallowedStatementErrorFailsCommit: if fn ignores a failed statement
// and returns nil, Update reports that nothing was committed.
func TestSwallowedStatementErrorFailsCommit(t *testing.T) {
	s, url := newStoreURL(t)
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, storetest.Spore("one")) }))
	// A trigger that fails every insert stands in for any server-side
	// failure the store cannot foresee.
	adminExec(t, url, `CREATE FUNCTION sporectl.fail() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RAISE EXCEPTION 'refused by test trigger'; END$$;
		CREATE TRIGGER fail BEFORE INSERT ON sporectl.outbox FOR EACH ROW EXECUTE FUNCTION sporectl.fail()`)
	err := s.Update(ctx, func(tx state.Tx) error {
		if _, err := tx.Append(ctx, "one", []state.Event{{Kind: state.KindPrompt, Text: "lost"}}); err != nil {
			return err
		}
		_, err := tx.Enqueue(ctx, state.OutboxEntry{ID: "m", Spore: "one", From: "user:x", Text: "t"})
		require.ErrorContains(t, err, "refused by test trigger")
		return nil // swallowed
	})
	require.ErrorContains(t, err, "rolled it back")
	var evs []state.Event
	require.NoError(t, s.View(ctx, func(tx state.Tx) error { var err error; evs, err = tx.Events(ctx, "one", 0, 0); return err }))
	require.Empty(t, evs)
}
