package ui

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
)

// TestPromptOverBudget: the prompt box to a spore over its budget keeps
// the prompt queued and says why (409), as prompt's exit 16 does.
func TestPromptOverBudget(t *testing.T) {
	f := newFixture(t)
	f.colony()
	ctx := context.Background()
	now := f.h.now() // the fixture's clock
	require.NoError(t, f.st.Store.Update(ctx, func(tx state.Tx) error {
		if _, _, err := wish.SetBudget(ctx, tx, "lab-a", state.Budget{TokensPerDay: 20}, "user:ann", now); err != nil {
			return err
		}
		// The gateway counted 24 tokens; the agent reports 3.
		if _, err := state.CountModelCall(ctx, tx, "lab-a", "msg_1", state.Usage{InputTokens: 14, OutputTokens: 10}, now); err != nil {
			return err
		}
		_, err := state.UpdateStatus(ctx, tx, "lab-a", func(_ state.Spore, st *state.Status) error {
			st.Activity = []state.HourActivity{{Hour: now.Truncate(time.Hour), InputTokens: 2, OutputTokens: 1}}
			return nil
		})
		return err
	}))
	u, csrf := loggedIn(t, f)
	before := f.written("lab-a")
	a := u.post("/ui/spores/lab-a/prompt", url.Values{"csrf": {csrf}, "text": {"one more"}})
	require.Equal(t, http.StatusConflict, a.status, a.body)
	require.Contains(t, a.body, "lab-a is over budget (24/20 tokens today): the prompt is queued")
	after := f.written("lab-a")
	require.Len(t, after.outbox, len(before.outbox)+1, "kept in the outbox")
	require.Len(t, f.prompts("lab-a", before.head), 1)
	require.Empty(t, f.rt.BridgeOf("lab-a").Prompts(), "not delivered")

	// The spore's page shows its spend today, counted by the gateway,
	// against its own budget, and its agent's report beside it; a spore
	// without one, with nothing counted or reported, shows none.
	page := u.get("/ui/spores/lab-a")
	require.Equal(t, http.StatusOK, page.status)
	require.Contains(t, page.body, `<span class="spend">today 24 tokens, $0.00 counted by the gateway of 20 tokens a day; 3 tokens, $0.00 reported by the agent</span>`)
	other := u.get("/ui/spores/lab-b")
	require.Equal(t, http.StatusOK, other.status)
	require.NotContains(t, other.body, `class="spend"`)

	// The direct mode: the agent's report is the spend, alone.
	require.NoError(t, f.st.Store.Update(ctx, func(tx state.Tx) error {
		s, err := tx.Settings(ctx)
		if err != nil {
			return err
		}
		s.ModelGateway = state.GatewayOff
		return tx.PutSettings(ctx, s)
	}))
	page = u.get("/ui/spores/lab-a")
	require.Contains(t, page.body, `<span class="spend">today 3 tokens, $0.00 of 20 tokens a day</span>`)
	require.NotContains(t, page.body, "counted by the gateway")
}
