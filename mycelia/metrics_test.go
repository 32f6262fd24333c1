package mycelia

import (
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// heard is a MessageMetrics that keeps what it heard.
type heard struct {
	mu      sync.Mutex
	sent    map[string]int
	refused map[[2]string]int
}

func (h *heard) Sent(route string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sent[route]++
}

func (h *heard) Refused(route, code string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refused[[2]string{route, code}]++
}

// TestMessageMetrics: the message routes report each message they
// recorded (a retried request once) and each refusal with its code,
// authentication's included; other routes report nothing.
func TestMessageMetrics(t *testing.T) {
	h := newHarness(t).colony()
	m := &heard{sent: map[string]int{}, refused: map[[2]string]int{}}
	h.srv.Metrics = m

	r := h.do("lab-myco", "POST", "/spores/lab-b/prompt", TellRequest{Text: "wake up?"})
	require.Equal(t, http.StatusConflict, r.status)
	r = h.do("lab-myco", "POST", "/spores/lab-c/prompt", TellRequest{Text: "run the tests", Force: true}, HeaderRequestID, "r-1")
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	r = h.do("lab-myco", "POST", "/spores/lab-c/prompt", TellRequest{Text: "run the tests", Force: true}, HeaderRequestID, "r-1")
	require.Equal(t, http.StatusAccepted, r.status, "a retry")
	r = h.do("lab-a", "POST", "/spores/lab-c/prompt", TellRequest{Text: "hi"})
	require.Equal(t, http.StatusForbidden, r.status, "a spore may not tell")
	r = h.do("", "POST", "/api/mycologist/summons", AskRequest{Text: "help"})
	require.Equal(t, http.StatusUnauthorized, r.status)
	r = h.do("lab-a", "POST", "/api/swarm/tell", SwarmTellRequest{Role: "nobody", Text: "hi"})
	require.Equal(t, http.StatusNotFound, r.status, "%s", r.body)
	r = h.do("lab-myco", "GET", "/api/spores", nil)
	require.Equal(t, http.StatusOK, r.status)
	r = h.do("", "GET", "/api/spores", nil)
	require.Equal(t, http.StatusUnauthorized, r.status)

	require.Equal(t, map[string]int{"tell": 1}, m.sent)
	require.Equal(t, map[[2]string]int{
		{"tell", CodeAsleep}:          1,
		{"tell", CodeForbidden}:       1,
		{"summons", CodeUnauthorized}: 1,
		{"swarm-tell", CodeNotFound}:  1,
	}, m.refused)
}
