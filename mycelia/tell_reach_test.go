package mycelia

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
)

// TestATellAnswersReachFirst: a tell's reach is judged in its send's
// transaction, yet it is still answered before anything else wrong with
// the request (its body, its text, its address), and a target that left
// the caller's reach after the records the address check shares were
// read is refused by the send, with nothing written.
func TestATellAnswersReachFirst(t *testing.T) {
	h := newHarness(t).colony()
	h.srv.SporesShare = time.Hour
	long := strings.Repeat("x", MaxTextBytes+1)
	for _, c := range []struct {
		name, target string
		body         any
		in           int // the answer when the target is in reach (lab-a)
	}{
		{"a field the route does not take", "far-x", map[string]any{"txt": "hi"}, http.StatusBadRequest},
		{"a blank text", "nope", map[string]any{"text": " "}, http.StatusBadRequest},
		{"a text too long", "far-x", map[string]any{"text": long}, http.StatusRequestEntityTooLarge},
		{"meant for another spore", "far-x", map[string]any{"text": "a job for lab-b"}, http.StatusConflict},
	} {
		r := h.do("lab-myco", http.MethodPost, "/spores/"+c.target+"/prompt", c.body)
		require.Equal(t, http.StatusForbidden, r.status, "%s, out of reach: %s", c.name, r.body)
		require.Contains(t, string(r.body), "is not in your reach")
		r = h.do("lab-myco", http.MethodPost, "/spores/lab-a/prompt", c.body)
		require.Equal(t, c.in, r.status, "%s, in reach: %s", c.name, r.body)
	}
	require.Zero(t, h.st.updates.Load(), "a refused tell opened a write")

	// lab-lead reaches lab-a, in the shared read too; then lab-a leaves
	// its swarm.
	r := h.do("lab-lead", http.MethodPost, "/spores/lab-a/prompt", map[string]any{"text": "hi"})
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	ctx := context.Background()
	require.NoError(t, h.st.Store.Update(ctx, func(tx state.Tx) error {
		_, _, err := wish.SetSpec(ctx, tx, "lab-a", wish.Spec{Rank: state.RankSpore, Swarm: "blue", Role: "coder"}, time.Now())
		return err
	}))
	lead, a := len(h.events("lab-lead")), len(h.events("lab-a"))
	for _, text := range []string{"hi again", "a job for lab-b"} {
		r := h.do("lab-lead", http.MethodPost, "/spores/lab-a/prompt", map[string]any{"text": text})
		require.Equal(t, http.StatusForbidden, r.status, "%q: %s", text, r.body)
		require.Contains(t, string(r.body), "is not in your reach")
	}
	require.Len(t, h.events("lab-lead"), lead, "nothing recorded for the sender")
	require.Len(t, h.events("lab-a"), a, "nothing recorded for the target")
	require.Len(t, h.prompts("lab-a"), 1, "the first tell alone")
}
