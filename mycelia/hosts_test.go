package mycelia

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHostLogsBounds(t *testing.T) {
	h := newHarness(t).colony()
	for _, q := range []string{"tail=0", "tail=5001", "tail=x", "tail=", "tail=1&tail=2", "tail=-1"} {
		r := h.do("arch", "GET", "/api/mycologist/hosts/lab-a/logs?"+q, nil)
		require.Equal(t, http.StatusBadRequest, r.status, "%s: %s", q, r.body)
		require.Contains(t, string(r.body), "tail must be a number from 1 to 5000")
	}
	// The spore id names its host too; the default tail is 100.
	r := h.do("arch", "GET", "/api/mycologist/hosts/lab-a/logs", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var l HostLogs
	r.decode(t, &l)
	require.Equal(t, HostLogs{Name: "bridge of lab-a", Spore: "lab-a", Tail: DefaultHostTail, Text: "one lab-a\ntwo lab-a\nthree lab-a\n"}, l)
	// A spore of the store that has no host (asleep) is not one.
	r = h.do("arch", "GET", "/api/mycologist/hosts/lab-b/logs", nil)
	require.Equal(t, http.StatusNotFound, r.status)
	require.JSONEq(t, `{"error":"not found","code":"not_found"}`, string(r.body))

	h.noHosts.Store(true)
	r = h.do("arch", "GET", "/api/mycologist/hosts", nil)
	require.Equal(t, http.StatusNotImplemented, r.status, "%s", r.body)
	require.Contains(t, string(r.body), CodeNotImplemented)
	require.Zero(t, h.st.updates.Load())
}
