package mycelia

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state/statetest"
)

// TestATellReadsItsTargetTwice: a tell to an awake spore reads the
// target's record in the send's transaction, where reach is judged on it
// and its delivery pass's snapshot is read too, and in that pass's commit
// (its fresh read): not in the caller's authentication, and nothing of
// the rest of the fleet but the caller (the address check's candidates
// are a shared read of the fleet, Fleet, not a read by id).
func TestATellReadsItsTargetTwice(t *testing.T) {
	h := newHarness(t).colony()
	c := &statetest.Reads{Store: h.st}
	h.srv.Store, h.srv.Pass.Store = c, c
	r := h.do("lab-myco", http.MethodPost, "/spores/lab-a/prompt", map[string]any{"text": "hi"})
	require.Equal(t, http.StatusAccepted, r.status, "answer: %s", r.body)
	var res SendResponse
	r.decode(t, &res)
	require.Equal(t, Delivered, res.State)
	require.Equal(t, 2, c.RecordReads("lab-a"), "the send with its reach and its pass's snapshot, the pass's commit")
	require.Equal(t, 1, c.RecordReads("lab-myco"), "the caller, once")
	require.Len(t, h.rt.BridgeOf("lab-a").Prompts(), 1)
}
