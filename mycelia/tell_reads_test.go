package mycelia

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state/statetest"
)

// TestATellReadsItsTargetThrice: a tell to an awake spore reads the
// target's record in the caller's authentication (reach), in the send's
// transaction, where its delivery pass's snapshot is read too, and in
// that pass's commit (its fresh read): the pass over the target alone
// reads it once, and nothing of the rest of the fleet but the caller.
func TestATellReadsItsTargetThrice(t *testing.T) {
	h := newHarness(t).colony()
	c := &statetest.Reads{Store: h.st}
	h.srv.Store, h.srv.Pass.Store = c, c
	r := h.do("lab-myco", http.MethodPost, "/spores/lab-a/prompt", map[string]any{"text": "hi"})
	require.Equal(t, http.StatusAccepted, r.status, "answer: %s", r.body)
	var res SendResponse
	r.decode(t, &res)
	require.Equal(t, Delivered, res.State)
	require.Equal(t, 3, c.RecordReads("lab-a"), "reach, the send with its pass's snapshot, the pass's commit")
	require.Equal(t, 1, c.RecordReads("lab-myco"), "the caller, once")
	require.Len(t, h.rt.BridgeOf("lab-a").Prompts(), 1)
}
