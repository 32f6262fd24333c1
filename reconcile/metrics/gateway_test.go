package metrics_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile/metrics"
	"github.com/sporectl/sporectl/reconcile/metrics/metricstest"
	"github.com/sporectl/sporectl/state"
)

// TestModelFamilies: the gateway's calls, tokens and upstream waits are
// counted by colony, code and kind; a kind with nothing adds no series.
func TestModelFamilies(t *testing.T) {
	p := metrics.NewProcess()
	p.ModelRequest("lab", 200)
	p.ModelRequest("lab", 200)
	p.ModelRequest("", 401)
	p.ModelTokens("lab", state.Usage{InputTokens: 100, OutputTokens: 7, CacheReadTokens: 3, CostMicros: 9})
	p.ModelTokens("lab", state.Usage{OutputTokens: 1})
	p.ModelUpstream(300 * time.Millisecond)

	txt := gatherText(t, p.Gatherer())
	fams := metricstest.Parse(t, txt)
	require.Equal(t, 2.0, fams.Value(t, "sporectl_model_requests_total", "colony", "lab", "code", "200"))
	require.Equal(t, 1.0, fams.Value(t, "sporectl_model_requests_total", "colony", "", "code", "401"))
	require.Equal(t, 100.0, fams.Value(t, "sporectl_model_tokens_total", "colony", "lab", "kind", "input"))
	require.Equal(t, 8.0, fams.Value(t, "sporectl_model_tokens_total", "colony", "lab", "kind", "output"))
	require.Equal(t, 3.0, fams.Value(t, "sporectl_model_tokens_total", "colony", "lab", "kind", "cache_read"))
	require.Equal(t, 3, fams.Series("sporectl_model_tokens_total"), "no series for cache_creation, which counted nothing")
	require.Equal(t, 1.0, fams.Value(t, "sporectl_model_upstream_seconds"))
	require.Equal(t, 0.3, fams["sporectl_model_upstream_seconds"].GetMetric()[0].GetHistogram().GetSampleSum())
	t.Run("promtool", func(t *testing.T) { metricstest.Promtool(t, txt) })
}
