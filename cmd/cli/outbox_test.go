package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
	"github.com/sporectl/sporectl/state/statetest"
)

// TestOutboxListAndDrop: `outbox ID` lists the queue and the dead
// letters (table, json, name), `outbox drop ID MSG` removes one of
// either, recorded on the spore's log; what is not there is exit 4, a
// wrong command line exit 2; status counts the dead letters. On both
// stores.
func TestOutboxListAndDrop(t *testing.T) {
	eachStore(t, func(t *testing.T, r *applyRig) {
		ctx := context.Background()
		r.ok("", "create", "a", "--colony", "lab")
		deadAt := testNow.Add(time.Minute)
		require.NoError(t, r.st.Update(ctx, func(tx state.Tx) error {
			for _, e := range []state.OutboxEntry{
				{ID: "m1", Spore: "a", From: "user:alice", Text: "first", At: testNow},
				{ID: "m2", Spore: "a", From: "spore:b", Text: "second", At: testNow, Wake: true},
				{ID: "m3", Spore: "a", From: "user:alice", Text: "third", At: testNow},
			} {
				if _, err := tx.Enqueue(ctx, e); err != nil {
					return err
				}
			}
			return tx.Bury(ctx, "a", "m2", state.DeadLetter{Reason: "the bridge answered 413 Request Entity Too Large: too big", At: deadAt})
		}))

		table := r.ok("", "outbox", "a")
		lines := strings.Split(strings.TrimSpace(table), "\n")
		require.Len(t, lines, 4, table)
		require.Regexp(t, `^MESSAGE\s+STATE\s+FROM\s+QUEUED\s+BYTES\s+REASON$`, lines[0])
		require.Regexp(t, `^m1\s+queued\s+user:alice\s+2026-11-01T12:00:00Z\s+5\s+-$`, lines[1])
		require.Regexp(t, `^m3\s+queued\s+`, lines[2])
		require.Regexp(t, `^m2\s+dead\s+spore:b\s+2026-11-01T12:00:00Z\s+6\s+the bridge answered 413`, lines[3])

		var got outboxList
		require.NoError(t, json.Unmarshal([]byte(r.ok("", "outbox", "a", "-o", "json")), &got))
		require.Equal(t, "a", got.Spore)
		require.Len(t, got.Queued, 2)
		require.Equal(t, outboxRow{ID: "m2", State: "dead", From: "spore:b", At: testNow, Bytes: 6, Wake: true,
			Dead: &state.DeadLetter{Reason: "the bridge answered 413 Request Entity Too Large: too big", At: deadAt}, Text: "second"}, got.Dead[0])
		require.Equal(t, "message/m1\nmessage/m3\nmessage/m2\n", r.ok("", "outbox", "a", "-o", "name"))

		var st struct {
			Spores []struct {
				ID          string `json:"id"`
				DeadLetters int    `json:"dead_letters"`
			} `json:"spores"`
		}
		res := r.run("", "status", "a", "-o", "json")
		require.NoError(t, json.Unmarshal([]byte(res.out), &st), res.err)
		require.Equal(t, 1, st.Spores[0].DeadLetters, "status counts the dead letters")

		require.Equal(t, "message/m2 dropped\n", r.ok("", "outbox", "drop", "a", "m2"))
		require.Equal(t, "message/m1 dropped\n", r.ok("", "outbox", "drop", "a", "m1"))
		require.NoError(t, json.Unmarshal([]byte(r.ok("", "outbox", "a", "-o", "json")), &got))
		require.Len(t, got.Queued, 1)
		require.Equal(t, "m3", got.Queued[0].ID)
		require.Empty(t, got.Dead)
		var dropped []string
		for _, ev := range statetest.Events(t, r.st, "a") {
			if ev.Action == "dropped" {
				require.Equal(t, "user:operator", ev.From)
				dropped = append(dropped, ev.Text)
			}
		}
		require.Len(t, dropped, 2)
		require.Contains(t, dropped[0], "prompt m2 (a dead letter, from spore:b) dropped from the outbox by user:operator")
		require.Contains(t, dropped[1], "prompt m1 (queued, from user:alice)")

		for _, tc := range []struct {
			args []string
			code int
		}{
			{[]string{"outbox", "drop", "a", "m2"}, ExitNotFound},
			{[]string{"outbox", "drop", "ghost", "m3"}, ExitNotFound},
			{[]string{"outbox", "ghost"}, ExitNotFound},
			{[]string{"outbox", "frob", "a", "m3"}, ExitUsage},
			{[]string{"outbox", "drop", "a"}, ExitUsage},
			{[]string{"outbox", "drop", "a", "m3", "m4"}, ExitUsage},
			{[]string{"outbox"}, ExitUsage},
			{[]string{"outbox", "NOT-AN-ID"}, ExitUsage},
		} {
			res := r.run("", tc.args...)
			require.Equal(t, tc.code, res.code, "%v: %s", tc.args, res.err)
		}
		require.NoError(t, json.Unmarshal([]byte(r.ok("", "outbox", "a", "-o", "json")), &got))
		require.Len(t, got.Queued, 1, "nothing refused was dropped")
	})
}

// TestPromptRefusesFramedTooLarge: a prompt under the bound whose text,
// as the bridge would be given it (each "[from" rewritten), is over the
// bound is refused before anything is written, exit 2 naming the limit:
// on main it was recorded and waited at the head of the outbox for ever.
func TestPromptRefusesFramedTooLarge(t *testing.T) {
	store := fixture(t)
	text := strings.Repeat("[from x ", 261000/8)
	require.Less(t, len(text), bridge.MaxPromptBytes)
	open := func() state.Store {
		st, err := dirstore.Open(t.Context(), store, dirstore.Options{})
		require.NoError(t, err)
		t.Cleanup(func() { st.Close() })
		return st
	}
	before := statetest.Events(t, open(), "worker-7")
	res := run(t, store, "prompt", "worker-7", text)
	require.Equal(t, ExitUsage, res.code, res.err)
	require.Contains(t, res.err, "at most 262144 are allowed")
	require.Contains(t, res.err, "as the agent would read it")
	require.Empty(t, res.out)
	st := open()
	require.Equal(t, before, statetest.Events(t, st, "worker-7"), "nothing was recorded")
	out := statetest.Read(t, st, func(ctx context.Context, tx state.Tx) ([]state.OutboxEntry, error) { return tx.Outbox(ctx, "worker-7") })
	require.Empty(t, out)
}

// TestPromptDeadLetter: a prompt its bridge refuses for good is a dead
// letter at once: prompt says so, exits 9, and outbox lists it.
func TestPromptDeadLetter(t *testing.T) {
	loc := filepath.Join(t.TempDir(), "store")
	r := newApplyRig(t, loc, statetest.DirAt(t, loc, applySettings))
	r.ok("", "create", "a", "--colony", "lab", "--wake")
	b := r.rt.BridgeOf("a")
	require.NotNil(t, b)
	b.SetRefuse(func(bridge.PromptRequest) error {
		return fmt.Errorf("bridge POST /v1/prompts: %w", &bridge.APIError{Status: 400, Message: "prompt text is not what I take"})
	})
	res := r.run("", "prompt", "a", "hello")
	require.Equal(t, ExitRuntime, res.code, res.err)
	require.Contains(t, res.out, "refused for good by the bridge of spore/a (the bridge answered 400 Bad Request: prompt text is not what I take): it is a dead letter now")
	var got outboxList
	require.NoError(t, json.Unmarshal([]byte(r.ok("", "outbox", "a", "-o", "json")), &got))
	require.Empty(t, got.Queued)
	require.Len(t, got.Dead, 1)
	require.Equal(t, "hello", got.Dead[0].Text)
}
