package reconcile_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/outbox"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// budgetResult is a turn's result line: 15 tokens in, 10 out, $0.000025.
const budgetResult = `{"type":"result","subtype":"success","total_cost_usd":0.000025,"usage":{"input_tokens":15,"output_tokens":10}}`

func TestPassSleepsASporeOverBudgetAndARaisedBudgetWakesIt(t *testing.T) {
	for kind, open := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			st := open(t)
			direct(t, st) // budgets judge the agent's report
			rt := reconciletest.New()
			// The fake bridge stamps its lines from fakeLineHour on: the
			// clock is on that UTC day.
			now := fakeLineHour.Add(30 * time.Minute)
			pass := reconciletest.NewPass(t, st, reconciletest.WithFake(rt), reconciletest.WithClock(func() time.Time { return now }))
			heal := func() *reconcile.Outcome {
				t.Helper()
				out, err := pass.Run(ctx, reconcile.Options{Heal: true, Deliver: true})
				require.NoError(t, err)
				return out
			}
			require.NoError(t, st.Update(ctx, func(tx state.Tx) error {
				for _, n := range []wish.New{
					{ID: "myc", Colony: "lab", Rank: state.RankColony},
					{ID: "a", Colony: "lab", Rank: state.RankSpore, Budget: state.Budget{TokensPerDay: 20}},
				} {
					if _, err := wish.Create(ctx, tx, n, now); err != nil {
						return err
					}
					if err := wish.Wake(ctx, tx, n.ID, now); err != nil {
						return err
					}
				}
				return nil
			}))
			heal() // starts both
			require.Equal(t, 2, rt.Calls("Start"))

			// A turn of 25 tokens: over its 20, and its turn has ended.
			rt.BridgeOf("a").Write(passText, budgetResult)
			out := heal()
			sp := statetest.Spore(t, st, "a")
			require.Equal(t, state.Paused, sp.Desired)
			require.Equal(t, state.ByBudget, sp.DesiredBy)
			require.Equal(t, 1, rt.Calls("Stop"))
			evs := lifecycle(statetest.Events(t, st, "a"))
			require.Equal(t, "desired Running → Paused: over budget (25/20 tokens today)", evs[len(evs)-2].Text)
			require.Equal(t, wish.BudgetFrom, evs[len(evs)-2].From)
			require.Equal(t, "ended its processes (asleep: over budget (25/20 tokens today))", evs[len(evs)-1].Text)
			h := health(out, "a")
			require.Equal(t, "budget", h.SleptBy)
			require.Equal(t, &state.Spend{Tokens: 25, CostMicros: 25}, h.Spend)
			require.Equal(t, &state.Budget{TokensPerDay: 20}, h.Budget)

			// Recorded in its log (and delivered, being awake).
			summons := func() []state.Event {
				var out []state.Event
				for _, e := range statetest.Events(t, st, "myc") {
					if e.Kind == state.KindMessage && e.From == reconcile.SummonsFrom {
						out = append(out, e)
					}
				}
				return out
			}
			require.Len(t, summons(), 1, "its colony mycologist is summoned")
			require.Contains(t, summons()[0].Text, "spore a reached its daily budget (25/20 tokens today)")
			require.Equal(t, reconcile.BudgetKey("a", fakeLineHour), statetest.Spore(t, st, "myc").Incidents[0].Key)

			// A prompt now is queued, not delivered, and says why.
			entry, err := outbox.Send(ctx, st, outbox.Message{To: "a", From: "user:ann", Text: "more"}, now)
			var over *outbox.OverBudgetError
			require.ErrorAs(t, err, &over)
			require.True(t, errors.Is(err, outbox.ErrOverBudget))
			require.Equal(t, "25/20 tokens today", over.Over)
			require.Equal(t, entry.ID, over.Entry)
			require.Equal(t, state.Paused, statetest.Spore(t, st, "a").Desired, "not woken")

			now = now.Add(time.Minute)
			h = health(heal(), "a")
			require.Equal(t, "asleep: over budget (25/20 tokens today)", h.Reason)
			require.Equal(t, 2, rt.Calls("Start"), "still asleep")
			require.Len(t, pending(t, st, "a"), 1, "the prompt waits")
			require.Len(t, summons(), 1, "summoned once")

			// A raised budget: the next pass wakes it for what is queued.
			require.NoError(t, st.Update(ctx, func(tx state.Tx) error {
				_, _, err := wish.SetBudget(ctx, tx, "a", state.Budget{TokensPerDay: 100}, "user:ann", now)
				return err
			}))
			heal()
			sp = statetest.Spore(t, st, "a")
			require.Equal(t, state.Running, sp.Desired)
			require.Equal(t, state.ByPerson, sp.DesiredBy)
			require.Equal(t, 3, rt.Calls("Start"))
			evs = lifecycle(statetest.Events(t, st, "a"))
			var woke bool
			for _, ev := range evs {
				woke = woke || ev.Action == "wake" && ev.From == wish.BudgetFrom
			}
			require.True(t, woke, "a wake event from the budget")
			heal()
			prompts := rt.BridgeOf("a").Prompts()
			require.Equal(t, entry.ID, prompts[len(prompts)-1].ID, "the queued prompt is delivered")
			require.Empty(t, pending(t, st, "a"))
		})
	}
}

// A message to a spore whose colony's spores together reached the
// colony's budget is recorded and held, on both stores (the colony's sum
// is read in Send's transaction); one to another colony is not.
func TestSendHoldsAMessageOverTheColonysBudget(t *testing.T) {
	for kind, open := range storeKinds(t) {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			st := open(t)
			direct(t, st) // budgets judge the agents' reports
			now := time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)
			require.NoError(t, st.Update(ctx, func(tx state.Tx) error {
				if _, err := wish.SetColony(ctx, tx, "lab", state.ColonySettings{Budget: state.Budget{CostPerDayMicros: 1_000_000}}); err != nil {
					return err
				}
				for _, n := range []wish.New{{ID: "a", Colony: "lab"}, {ID: "b", Colony: "lab"}, {ID: "c", Colony: "ops"}} {
					n.Rank = state.RankSpore
					sp, err := wish.Create(ctx, tx, n, now)
					if err != nil {
						return err
					}
					if err := wish.Wake(ctx, tx, n.ID, now); err != nil {
						return err
					}
					if sp, err = tx.Spore(ctx, sp.ID); err != nil {
						return err
					}
					sp.Activity = []state.HourActivity{{Hour: now.Truncate(time.Hour), CostMicros: 600_000}}
					if err := tx.PutStatus(ctx, sp.ID, sp.StatusAtWish()); err != nil {
						return err
					}
				}
				return nil
			}))
			_, err := outbox.Send(ctx, st, outbox.Message{To: "a", From: "user:ann", Text: "hi"}, now)
			var over *outbox.OverBudgetError
			require.ErrorAs(t, err, &over)
			require.Equal(t, "colony lab: $1.20/$1.00 today", over.Over)
			require.Len(t, pending(t, st, "a"), 1, "recorded")
			_, err = outbox.Send(ctx, st, outbox.Message{To: "c", From: "user:ann", Text: "hi"}, now)
			require.NoError(t, err, "another colony's spend is its own")
			_, err = outbox.Send(ctx, st, outbox.Message{To: "b", From: "user:ann", Text: "hi", OverBudget: true}, now)
			require.NoError(t, err, "marked over-budget: sent as usual")
			require.True(t, pending(t, st, "b")[0].OverBudget)
		})
	}
}

// direct puts st in the direct mode (state.GatewayOff), where budgets
// judge what the agents report: the tests of that rule run in it, the
// gateway's count being the default's.
func direct(t *testing.T, st state.Store) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, st.Update(ctx, func(tx state.Tx) error {
		s, err := tx.Settings(ctx)
		if err != nil {
			return err
		}
		s.ModelGateway = state.GatewayOff
		return tx.PutSettings(ctx, s)
	}))
}
