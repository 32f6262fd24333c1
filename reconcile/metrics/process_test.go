package metrics_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/metrics"
	"github.com/sporectl/sporectl/reconcile/metrics/metricstest"
	"github.com/sporectl/sporectl/state"
)

// TestProcessCounts: what serve's passes and message routes report is
// counted: passes by kind (a failed one as an error too), deliveries by
// colony with their wait since the send, breakers opened, messages sent
// and refused by route and reason. A dry run counts only as a pass.
func TestProcessCounts(t *testing.T) {
	p := metrics.NewProcess()
	p.Now = func() time.Time { return t0 }
	sp := state.Spore{Wish: state.Wish{ID: "x", Colony: "c"}}
	out := &reconcile.Outcome{Plans: []*reconcile.SporePlan{{Spore: sp, OpenBreaker: true, Delivered: []reconcile.Delivery{
		{Entry: state.OutboxEntry{ID: "1", At: t0.Add(-3 * time.Second)}},
		{Entry: state.OutboxEntry{ID: "2", At: t0.Add(-7 * time.Second)}},
		{Entry: state.OutboxEntry{ID: "3", At: t0}, Err: errors.New("bridge went away")},
	}}}}
	p.PassFinished(reconcile.Options{IDs: []string{"x"}, Deliver: true}, out, 20*time.Millisecond, nil)
	p.PassFinished(reconcile.Options{DryRun: true}, out, time.Millisecond, nil)
	p.PassFinished(reconcile.Options{}, nil, time.Millisecond, errors.New("store unavailable"))
	p.Sent("tell")
	p.Sent("tell")
	p.Refused("tell", "asleep")
	p.Refused("swarm-tell", "rate_limited")

	txt := gatherText(t, p.Gatherer())
	fams := metricstest.Parse(t, txt)
	require.Equal(t, 2.0, fams.Value(t, "sporectl_messages_delivered_total", "colony", "c"))
	require.Equal(t, 2.0, fams.Value(t, "sporectl_message_delivery_seconds"))
	h := fams["sporectl_message_delivery_seconds"].GetMetric()[0].GetHistogram()
	require.Equal(t, 10.0, h.GetSampleSum())
	require.Equal(t, 1.0, fams.Value(t, "sporectl_breaker_opens_total", "colony", "c"))
	require.Equal(t, 1.0, fams.Value(t, "sporectl_pass_duration_seconds", "kind", "deliver"))
	require.Equal(t, 1.0, fams.Value(t, "sporectl_pass_duration_seconds", "kind", "dry_run"))
	require.Equal(t, 1.0, fams.Value(t, "sporectl_pass_duration_seconds", "kind", "read"))
	require.Equal(t, 1.0, fams.Value(t, "sporectl_pass_errors_total", "kind", "read"))
	require.Equal(t, 2.0, fams.Value(t, "sporectl_messages_sent_total", "route", "tell"))
	require.Equal(t, 1.0, fams.Value(t, "sporectl_messages_refused_total", "route", "tell", "reason", "asleep"))
	require.Equal(t, 1.0, fams.Value(t, "sporectl_messages_refused_total", "route", "swarm-tell", "reason", "rate_limited"))
	require.NotZero(t, fams.Series("go_goroutines"), "the Go runtime's families are there")

	t.Run("promtool", func(t *testing.T) { metricstest.Promtool(t, txt) })
}
