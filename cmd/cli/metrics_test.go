package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/mycelia"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/metrics"
	"github.com/sporectl/sporectl/reconcile/metrics/metricstest"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
)

// TestReconcileMetricsFile: `reconcile --metrics-file` writes the fleet's
// and the run's families for node_exporter, whatever the fleet's health
// (exit 3 here: a Dead spore whose start fails); promtool finds nothing
// wrong with it.
func TestReconcileMetricsFile(t *testing.T) {
	c := newFakeColony(t)
	c.ok("create", "a", "--colony", "lab", "--wake")
	c.ok("create", "b", "--colony", "lab")
	c.ok("create", "m", "--colony", "lab", "--rank", "colony")
	c.ok("wake", "m")
	c.rt.Kill("m", "OOMKilled")
	c.rt.StartErr["m"] = os.ErrPermission
	c.ok("prompt", "a", "run the tests")
	path := filepath.Join(t.TempDir(), "sporectl.prom")
	r := c.run("", "reconcile", "--metrics-file", path)
	require.Equal(t, ExitUnhealthy, r.code, r.err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	fams := metricstest.Parse(t, string(b))
	require.Equal(t, 1.0, fams.Value(t, "sporectl_spores", "colony", "lab", "rank", "spore", "effective", "Healthy"))
	require.Equal(t, 1.0, fams.Value(t, "sporectl_spores", "colony", "lab", "rank", "spore", "effective", "Paused"))
	require.Equal(t, 1.0, fams.Value(t, "sporectl_spores", "colony", "lab", "rank", "colony", "effective", "Dead"))
	require.Equal(t, 0.0, fams.Value(t, "sporectl_outbox_messages", "colony", "lab"))
	require.Equal(t, float64(testNow.Unix()), fams.Value(t, "sporectl_reconcile_timestamp_seconds"))
	require.Positive(t, fams.Value(t, "sporectl_reconcile_duration_seconds"))
	t.Run("promtool", func(t *testing.T) { metricstest.Promtool(t, string(b)) })
}

// TestReconcileMetricsFileFlag: a --metrics-file the run could not write
// is refused before the pass runs (exit 2, naming the flag), as is one
// with --dry-run, which writes nothing.
func TestReconcileMetricsFileFlag(t *testing.T) {
	c := newFakeColony(t)
	c.ok("create", "a", "--wake")
	dir := t.TempDir()
	observed := c.rt.Calls("Observe")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--metrics-file", filepath.Join(dir, "missing", "x.prom")}, "invalid value \"" + filepath.Join(dir, "missing", "x.prom") + "\" for --metrics-file: its directory"},
		{[]string{"--metrics-file", dir}, "it is a directory"},
		{[]string{"--metrics-file", filepath.Join(dir, "x.prom"), "--dry-run"}, "--metrics-file and --dry-run do not go together"},
	} {
		r := c.run("", append([]string{"reconcile"}, tc.args...)...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", tc.args, r.err)
		require.Contains(t, r.err, tc.want)
	}
	require.Equal(t, observed, c.rt.Calls("Observe"), "the pass did not run")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Empty(t, entries)
}

// TestServeMetrics: serve's GET /metrics on its one mux: 401 without an
// operator's bearer token (a spore's does not do); with one, the fleet's
// families and this process's counters, among them the refusal of a
// tell that the API answered on the same mux. Only GET: another method
// is the API's 404.
func TestServeMetrics(t *testing.T) {
	c := newFakeColony(t)
	c.ok("create", "a", "--colony", "lab", "--wake")
	c.ok("create", "b", "--colony", "lab")
	c.ok("create", "m", "--colony", "lab", "--rank", "colony", "--wake")
	op := strings.TrimSpace(c.ok("token", "create", "--operator", "prometheus"))
	ts, sporeTok := c.serve(t, "m")
	do := func(method, p, auth string, hdr ...string) (int, string) {
		req, err := http.NewRequest(method, ts.URL+p, strings.NewReader(`{"text":"wake up?"}`))
		require.NoError(t, err)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := ts.Client().Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	for _, auth := range []string{"", "Bearer " + sporeTok, "Bearer spo_wrong"} {
		code, body := do(http.MethodGet, metrics.Path, auth)
		require.Equal(t, http.StatusUnauthorized, code, "%q", auth)
		require.Contains(t, body, "needs the header \"Authorization: Bearer <operator token>\"")
	}
	code, body := do(http.MethodPost, metrics.Path, "Bearer "+op)
	require.Equal(t, http.StatusNotFound, code, body)

	// The API refuses a tell to a sleeping spore; /metrics counts it.
	code, body = do(http.MethodPost, "/spores/b/prompt", "Bearer "+sporeTok, mycelia.HeaderSpore, "m")
	require.Equal(t, http.StatusConflict, code, body)
	code, body = do(http.MethodGet, metrics.Path, "Bearer "+op)
	require.Equal(t, http.StatusOK, code, body)
	fams := metricstest.Parse(t, body)
	require.Equal(t, 1.0, fams.Value(t, "sporectl_messages_refused_total", "route", "tell", "reason", mycelia.CodeAsleep))
	require.Equal(t, 2.0, fams.Value(t, "sporectl_spores", "colony", "lab", "rank", "spore", "effective", "Healthy")+
		fams.Value(t, "sporectl_spores", "colony", "lab", "rank", "spore", "effective", "Paused"))
	require.Equal(t, 1.0, fams.Value(t, "sporectl_spores", "colony", "lab", "rank", "colony", "effective", "Healthy"))
	require.Positive(t, fams.Value(t, "sporectl_pass_duration_seconds", "kind", "read"))
	t.Run("promtool", func(t *testing.T) { metricstest.Promtool(t, body) })
}

// serve starts serve's handler over c's store, with spore's token set to a
// fresh one it returns (the token a spore's agent would be handed).
func (c *fakeColony) serve(t *testing.T, spore string) (*httptest.Server, string) {
	t.Helper()
	ctx := context.Background()
	st, err := dirstore.Open(ctx, c.store, dirstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	sporeTok, hash, err := state.NewToken()
	require.NoError(t, err)
	require.NoError(t, st.Update(ctx, func(tx state.Tx) error { return tx.SetTokenHash(ctx, spore, hash) }))

	f := NewFactory(IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
	f.Getenv = func(string) string { return "" }
	f.Now = func() time.Time { return c.now }
	f.NewRuntime = func(context.Context, state.Store, state.Settings) (reconcile.Runtime, error) { return c.rt, nil }
	f.Dial = c.rt.Dial
	o := &serveOptions{f: f}
	ts := httptest.NewServer(o.handler(ctx, o.newAPI(ctx, st, nil), st))
	t.Cleanup(ts.Close)
	return ts, sporeTok
}
