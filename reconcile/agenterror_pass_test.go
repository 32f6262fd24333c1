package reconcile_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/state"
)

// TestPassNamesAnAgentThatCannotStart: a bridge that answers but reports
// its agent's last start failed makes its spore Suspect/AgentCannotStart
// with the bridge's words, sanitised and cut (the bridge is the agent's);
// a 10 MB agent_error is a status over its bound, a breach that costs the
// pass no more than the bound; the other spore is untouched.
func TestPassNamesAnAgentThatCannotStart(t *testing.T) {
	cases := []struct {
		name     string
		agentErr string
		code     reconcile.Reason
		reason   []string // in the reason
		never    []string // in nothing the pass says
		bound    int      // the observed agent_error's bound; 0: none kept
	}{
		{"named", "start: start claude /opt/claude: fork/exec /opt/claude: permission denied", reconcile.ReasonAgentCannotStart,
			[]string{"the agent cannot start: start: start claude /opt/claude: fork/exec /opt/claude: permission denied"}, nil, bridge.MaxStatusText},
		{"long and hostile", "exited\x1b]8;;http://evil\x07\u202e" + strings.Repeat("x", 60<<10), reconcile.ReasonAgentCannotStart,
			[]string{"the agent cannot start: exited\\x1b]8;;http://evil\\x07"}, []string{"\x1b", "\u202e", strings.Repeat("x", bridge.MaxStatusText)}, bridge.MaxStatusText},
		{"ten megabytes", strings.Repeat("y", 10<<20), reconcile.ReasonContractBreach,
			[]string{"an answer longer than 65536 bytes"}, []string{"yyyy"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "a", "b")
			e.awake("a", "b")
			h := reconciletest.NewHTTP(e.rt)
			defer h.Close()
			body, err := json.Marshal(bridge.Status{State: bridge.StateIdle, Healthy: true, Agent: "claude", AgentError: tc.agentErr})
			require.NoError(t, err)
			mux := http.NewServeMux()
			mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(body) })
			mux.HandleFunc("GET /v1/events", func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.WriteString(w, `{"events":[],"last_seq":0}`)
			})
			srv := httptest.NewServer(mux)
			defer srv.Close()
			pass := e.pass()
			pass.Dial = reconcile.DialHTTP
			pass.Runtime = func(context.Context, state.Settings) (reconcile.Runtime, error) {
				return &hostileRuntime{Runtime: h.Runtime(), hostile: map[string]string{"a": srv.URL}}, nil
			}
			out, err := pass.Run(context.Background(), reconcile.Options{Heal: true, Deliver: true})
			require.NoError(t, err)
			a := health(out, "a")
			require.Equal(t, policy.Suspect, a.Effective)
			require.Equal(t, tc.code, a.Code)
			require.Equal(t, tc.code, a.Observed.Reason)
			for _, s := range tc.reason {
				require.Contains(t, a.Reason, s)
			}
			require.LessOrEqual(t, len(a.Observed.AgentError), tc.bound)
			doc, err := json.Marshal(out.Result)
			require.NoError(t, err)
			for _, s := range tc.never {
				require.NotContains(t, string(doc), s)
				require.NotContains(t, e.lastHealth("a"), s)
			}
			require.Equal(t, policy.Healthy, health(out, "b").Effective)
			require.Empty(t, health(out, "b").Observed.AgentError)
		})
	}
}
