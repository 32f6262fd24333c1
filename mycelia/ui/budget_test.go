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
		sp, err := tx.Spore(ctx, "lab-a")
		if err != nil {
			return err
		}
		sp.Activity = []state.HourActivity{{Hour: now.Truncate(time.Hour), InputTokens: 14, OutputTokens: 10}}
		return tx.PutStatus(ctx, sp.ID, sp.StatusAtWish())
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

	// The spore's page shows its spend today against its own budget; a
	// spore without one shows none.
	page := u.get("/ui/spores/lab-a")
	require.Equal(t, http.StatusOK, page.status)
	require.Contains(t, page.body, `<span class="spend">today 24 tokens, $0.00 of 20 tokens a day</span>`)
	other := u.get("/ui/spores/lab-b")
	require.Equal(t, http.StatusOK, other.status)
	require.NotContains(t, other.body, `class="spend"`)
}
