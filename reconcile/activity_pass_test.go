package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// The fake bridge stamps its line n at 2026-01-01T00:00:00Z + n seconds.
var fakeLineHour = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const (
	passResult = `{"type":"result","subtype":"success","total_cost_usd":0.25,"usage":{"input_tokens":100,"cache_creation_input_tokens":20,"cache_read_input_tokens":9000,"output_tokens":30}}`
	passTools  = `{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"go.mod"}},{"type":"tool_use","id":"t2","name":"Bash","input":{"command":"ls"}}]}}`
	passText   = `{"type":"assistant","message":{"content":[{"type":"text","text":"done"}]}}`
	// A result line the agent tore: counted as nothing, ingested all the same.
	passTorn = `{"type":"result","usage":"many","total_cost_usd":"lots"}`
)

// storeKinds are the backends the end-to-end test runs on.
func storeKinds(t *testing.T) map[string]func(t *testing.T) state.Store {
	return map[string]func(t *testing.T) state.Store{
		"dir": func(t *testing.T) state.Store { return statetest.Dir(t, state.Settings{Runtime: "local"}) },
		"postgres": func(t *testing.T) state.Store {
			st, _ := statetest.Postgres(t, state.Settings{Runtime: "local"})
			return st
		},
	}
}

func TestPassCountsActivityInTheCommitThatIngests(t *testing.T) {
	for kind, open := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			st := &statetest.Counting{Store: open(t)}
			now := fakeLineHour.Add(2*time.Hour + 10*time.Minute)
			rt := reconciletest.New()
			require.NoError(t, st.Update(ctx, func(tx state.Tx) error {
				return tx.CreateSpore(ctx, state.Spore{Wish: state.Wish{ID: "a", Colony: "lab", Rank: state.RankSpore, Desired: state.Running, Created: now, Updated: now}})
			}))
			pass := reconciletest.NewPass(t, st, reconciletest.WithFake(rt), reconciletest.WithClock(func() time.Time { return now }))
			run := func() {
				t.Helper()
				_, err := pass.Run(ctx, reconcile.Options{Heal: true, Deliver: true})
				require.NoError(t, err)
			}
			read := func() state.Spore { t.Helper(); return statetest.Spore(t, st, "a") }
			run() // starts it
			b := rt.BridgeOf("a")
			b.Write(passTools, passText, passTorn, passResult, passTools, passResult)
			run()
			sp := read()
			require.Equal(t, uint64(6), sp.BridgeSeq, "the torn line is ingested like the others")
			// The pass's hour, not the lines' (the bridge's time is the
			// agent's word); every line's bytes count as stored.
			hour := now.Truncate(time.Hour)
			stored := int64(2*len(passTools) + len(passText) + len(passTorn) + 2*len(passResult))
			require.Equal(t, []state.HourActivity{{Hour: hour, Turns: 2, ToolCalls: 4, InputTokens: 240, OutputTokens: 60, CostMicros: 500_000, StoredBytes: stored}}, sp.Activity)

			// Nothing new: nothing written, the counts as they were.
			updates := st.Updates.Load()
			run()
			require.Equal(t, updates, st.Updates.Load(), "a pass with nothing ingested writes nothing")
			require.Equal(t, sp.Activity, read().Activity)

			// A line a day later adds that day's hour; a week later, the
			// old hours are dropped when new lines come.
			b.Write(passText)
			now = now.Add(24 * time.Hour)
			run()
			sp = read()
			require.Len(t, sp.Activity, 2)
			require.Equal(t, state.HourActivity{Hour: now.Truncate(time.Hour), StoredBytes: int64(len(passText))}, sp.Activity[1])
			now = now.Add(time.Duration(state.MaxActivity) * time.Hour)
			b.Write(passResult) // stamped long ago: counted now all the same
			run()
			sp = read()
			require.Equal(t, uint64(8), sp.BridgeSeq)
			require.Equal(t, []state.HourActivity{{Hour: now.Truncate(time.Hour), Turns: 1, InputTokens: 120, OutputTokens: 30, CostMicros: 250_000,
				StoredBytes: int64(len(passResult))}}, sp.Activity, "hours older than the window are dropped")
		})
	}
}
