package mycelia

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state/statetest"
)

// TestACallAboutASporeReadsItWithTheCaller: the spore a call names is read
// in the View that authenticates the caller, so reachable opens none of
// its own; one that does not exist, or is out of reach, is still the same
// 403 as before.
func TestACallAboutASporeReadsItWithTheCaller(t *testing.T) {
	h := newHarness(t).colony()
	h.srv.SporesShare = time.Hour
	c := &statetest.Reads{Store: h.st}
	h.srv.Store, h.srv.Pass.Store = c, c

	// What the call's own pass opens, counted alone.
	_, err := h.srv.Pass.Run(context.Background(), reconcile.Options{IDs: []string{"lab-a"}})
	require.NoError(t, err)
	pass := c.Views.Load()
	c.Reset()
	r := h.do("lab-myco", http.MethodGet, "/api/spores/lab-a", nil)
	require.Equal(t, http.StatusOK, r.status, "answer: %s", r.body)
	require.Equal(t, pass+2, c.Views.Load(), "the pass's, the caller's with lab-a's, and the turns'")

	for _, id := range []string{"nope", "far-x"} {
		r := h.do("lab-myco", http.MethodPost, "/spores/"+id+"/prompt", map[string]any{"text": "hi", "force": true})
		require.Equal(t, http.StatusForbidden, r.status, "%s: %s", id, r.body)
	}
}
