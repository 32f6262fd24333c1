package metrics_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile/metrics"
	"github.com/sporectl/sporectl/reconcile/metrics/metricstest"
	"github.com/sporectl/sporectl/state"
)

// operator gives st an operator token and a1 a spore token, returning
// both tokens.
func operator(t *testing.T, st state.Store) (op, spore string) {
	t.Helper()
	ctx := context.Background()
	op, hash, err := state.NewOperatorToken()
	require.NoError(t, err)
	spore, sporeHash, err := state.NewToken()
	require.NoError(t, err)
	err = st.Update(ctx, func(tx state.Tx) error {
		s, err := tx.Settings(ctx)
		if err != nil {
			return err
		}
		s = s.WithOperators([]state.OperatorToken{{Name: "prometheus", Hash: hash, Session: state.SessionHash(state.OperatorSessionKey(op)), Created: t0}})
		if err := tx.PutSettings(ctx, s); err != nil {
			return err
		}
		return tx.SetTokenHash(ctx, "a1", sporeHash)
	})
	require.NoError(t, err)
	return op, spore
}

// TestHandlerAuthorization: GET /metrics answers only an operator's
// bearer token; no token, a spore's token, a wrong one, another scheme or
// two headers are one 401 that says what to send (and never echoes what
// was sent).
func TestHandlerAuthorization(t *testing.T) {
	f := newFleet(t)
	op, sporeTok := operator(t, f.st)
	proc := metrics.NewProcess()
	f.pass.Finished = proc.PassFinished
	h := metrics.NewHandler(f.st, f.pass, proc)
	h.Now = func() time.Time { return t0 }
	get := func(auth ...string) (int, http.Header, string) {
		req := httptest.NewRequest(http.MethodGet, metrics.Path, nil)
		req.RemoteAddr = "127.0.0.1:40000" // loopback proves nothing
		for _, a := range auth {
			req.Header.Add("Authorization", a)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		b, err := io.ReadAll(w.Result().Body)
		require.NoError(t, err)
		return w.Code, w.Header(), string(b)
	}
	for name, auth := range map[string][]string{
		"none":           nil,
		"spore token":    {"Bearer " + sporeTok},
		"wrong token":    {"Bearer spo_not-a-token"},
		"basic":          {"Basic " + op},
		"bare token":     {op},
		"two headers":    {"Bearer " + op, "Bearer " + op},
		"empty bearer":   {"Bearer "},
		"revoked prefix": {"Bearer " + op[:len(op)-1]},
	} {
		t.Run(name, func(t *testing.T) {
			code, hdr, body := get(auth...)
			require.Equal(t, http.StatusUnauthorized, code)
			require.Equal(t, metrics.Unauthorized+"\n", body)
			require.Equal(t, `Bearer realm="sporectl metrics"`, hdr.Get("WWW-Authenticate"))
			require.NotContains(t, body, op)
			require.NotContains(t, body, sporeTok)
		})
	}
	code, hdr, body := get("Bearer " + op)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, hdr.Get("Content-Type"), "text/plain")
	fams := metricstest.Parse(t, body)
	require.Equal(t, 3.0, fams.Value(t, "sporectl_spores", "colony", "a", "rank", "spore", "effective", "Healthy"))
	// The scrape's own pass is counted among the process's.
	require.Equal(t, 1.0, fams.Value(t, "sporectl_pass_duration_seconds", "kind", "read"))
	code, _, body = get("bearer " + op) // the scheme is case-insensitive
	require.Equal(t, http.StatusOK, code)
	t.Run("promtool", func(t *testing.T) { metricstest.Promtool(t, body) })
}

// TestHandlerSharesAPass: scrapes at once share the pass in flight (or
// run their own after it), each answering the whole fleet.
func TestHandlerSharesAPass(t *testing.T) {
	f := newFleet(t)
	op, _ := operator(t, f.st)
	h := metrics.NewHandler(f.st, f.pass, nil)
	var wg sync.WaitGroup
	bodies := make([]string, 8)
	codes := make([]int, 8)
	for i := range bodies {
		wg.Go(func() {
			req := httptest.NewRequest(http.MethodGet, metrics.Path, nil)
			req.Header.Set("Authorization", "Bearer "+op)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			codes[i], bodies[i] = w.Code, w.Body.String()
		})
	}
	wg.Wait()
	for i, b := range bodies {
		require.Equal(t, http.StatusOK, codes[i], b)
		fams := metricstest.Parse(t, b)
		require.Equal(t, 1.0, fams.Value(t, "sporectl_spores", "colony", "b", "rank", "spore", "effective", "Paused"))
		require.Zero(t, fams.Series("sporectl_messages_sent_total"), "no process counters without a Process")
	}
}
