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

func TestTailText(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		max  int
		want string
		cut  bool
	}{
		{"", 3, 100, "", false},
		{"a\nb\nc\n", 2, 100, "b\nc\n", false},
		{"a\nb\nc", 2, 100, "b\nc", false},
		{"a\nb\nc\n", 5, 100, "a\nb\nc\n", false},
		{"a\nb\nc\n", 1, 100, "c\n", false},
		{"aaaa\nbb\ncc\n", 5, 7, "bb\ncc\n", true},
		{"aaaa\nbb\ncc\n", 5, 5, "cc\n", true},
	} {
		got, cut := TailText(c.in, c.n, c.max)
		require.Equal(t, c.want, got, "%q %d", c.in, c.n)
		require.Equal(t, c.cut, cut, "%q", c.in)
	}
}
