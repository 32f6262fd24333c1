package gateway_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge/fakeapi"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// TestBudgetStopsAtTheGateway: a spore whose bridge reports nothing (it
// lies, or calls the gateway with curl) is still counted, and its next
// call once its budget is reached is refused with why, reaching no
// upstream; so is a spore of a colony over its budget. The [arch] is
// never stopped.
func TestBudgetStopsAtTheGateway(t *testing.T) {
	lab := state.ColonySettings{Budget: state.Budget{TokensPerDay: 500}}
	w := newWorld(t, state.Settings{}.WithColony("lab", lab))
	w.spore("w1", budget(200))
	w.spore("w2")
	w.spore("arch", func(sp *state.Spore) { sp.Rank = state.RankArch; sp.Budget = state.Budget{TokensPerDay: 1} })

	// 101 tokens a call (100 in, 1 out: the fake's "ok").
	for range 2 {
		require.Equal(t, http.StatusOK, w.call(w.key("w1"), "/model/v1/messages", streamed).status)
	}
	require.Equal(t, int64(202), w.counted("w1").Spend().Tokens)
	require.Nil(t, statetest.Spore(t, w.store.Store, "w1").Activity, "its bridge reported nothing")
	before := w.up.calls()
	requireRefusal(t, w.call(w.key("w1"), "/model/v1/messages", streamed), 403, "permission_error", "spore w1 is over its budget: 202/200 tokens today")
	require.Equal(t, before, w.up.calls())

	// The [arch] is over its own budget, and calls on; its spend counts
	// in its colony's.
	for range 2 {
		require.Equal(t, http.StatusOK, w.call(w.key("arch"), "/model/v1/messages", whole).status)
	}
	// w1 202 + arch 202 = 404: w2 may make one more call (505), then
	// its colony is over.
	require.Equal(t, http.StatusOK, w.call(w.key("w2"), "/model/v1/messages", whole).status)
	requireRefusal(t, w.call(w.key("w2"), "/model/v1/messages", whole), 403, "permission_error", "spore w2 is over its colony's budget: colony lab: 505/500 tokens today")
	require.Equal(t, http.StatusOK, w.call(w.key("arch"), "/model/v1/messages", whole).status)

	// The next day, its colony without a budget, w2 calls again.
	require.NoError(t, w.store.Store.Update(context.Background(), func(tx state.Tx) error {
		s, err := tx.Settings(context.Background())
		if err != nil {
			return err
		}
		s.Colonies = nil
		return tx.PutSettings(context.Background(), s)
	}))
	w.now = w.now.AddDate(0, 0, 1)
	require.Equal(t, http.StatusOK, w.call(w.key("w2"), "/model/v1/messages", whole).status)
}

// TestBudgetMidTurn: a turn of many calls is stopped at the call that
// finds the budget reached, not after the turn.
func TestBudgetMidTurn(t *testing.T) {
	w := newWorld(t, state.Settings{})
	w.spore("w1", budget(250))
	w.up.fake.Script(fakeapi.Rule{Match: "hello", Steps: []fakeapi.Reply{fakeapi.Bash("true"), fakeapi.Bash("true"), fakeapi.Bash("true"), fakeapi.Text("end")}})
	var codes []int
	for range 4 {
		codes = append(codes, w.call(w.key("w1"), "/model/v1/messages", streamed).status)
	}
	require.Equal(t, []int{200, 200, 200, 403}, codes, "the third call finds 202 of 250 and passes; the fourth finds 303")
}

// TestAPersonsOverBudgetPromptIsWorkedOn: a spore over its budget that a
// pass delivered a person's over-budget prompt (its GrantUntil) calls the
// model for that turn; once the leave ends it is refused again.
func TestAPersonsOverBudgetPromptIsWorkedOn(t *testing.T) {
	w := newWorld(t, state.Settings{})
	w.spore("w1", budget(100))
	require.Equal(t, http.StatusOK, w.call(w.key("w1"), "/model/v1/messages", whole).status)
	requireRefusal(t, w.call(w.key("w1"), "/model/v1/messages", whole), 403, "permission_error", "spore w1 is over its budget: 101/100 tokens today")

	require.NoError(t, w.store.Store.Update(context.Background(), func(tx state.Tx) error {
		_, err := state.UpdateStatus(context.Background(), tx, "w1", func(_ state.Spore, st *state.Status) error {
			st.GrantUntil = policy.Grant(w.now)
			return nil
		})
		return err
	}))
	before := w.up.calls()
	a := w.call(w.key("w1"), "/model/v1/messages", streamed)
	require.Equal(t, http.StatusOK, a.status, a.body)
	require.Equal(t, http.StatusOK, w.call(w.key("w1"), "/model/v1/messages", whole).status)
	require.Equal(t, before+2, w.up.calls())
	require.Equal(t, int64(303), w.counted("w1").Spend().Tokens, "what it spent on leave is counted")

	w.now = w.now.Add(policy.GrantFor)
	requireRefusal(t, w.call(w.key("w1"), "/model/v1/messages", whole), 403, "permission_error", "spore w1 is over its budget: 303/100 tokens today")
}

// TestGatewayOff: in a store whose gateway is off (direct mode), the
// gateway lets no call through, and says why.
func TestGatewayOff(t *testing.T) {
	w := newWorld(t, state.Settings{ModelGateway: state.GatewayOff})
	w.spore("w1")
	requireRefusal(t, w.call(w.key("w1"), "/model/v1/messages", whole), 403, "permission_error", "the store's model gateway is off (model_gateway: off): its spores call the model directly; sporectl init --model-gateway on turns it on")
	require.Zero(t, w.up.calls())
}
