package metrics_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/metrics"
	"github.com/sporectl/sporectl/reconcile/metrics/metricstest"
	"github.com/sporectl/sporectl/state"
)

// TestTextfile: a reconcile run's textfile holds the fleet's families and
// the run's: its duration and time, and per colony what it delivered
// (a1's prompt) and the breakers it opened; it replaces the file whole,
// leaving nothing else in the directory, readable by node_exporter
// (another user).
func TestTextfile(t *testing.T) {
	ctx := context.Background()
	f := newFleet(t)
	err := f.st.Update(ctx, func(tx state.Tx) error {
		_, err := tx.Enqueue(ctx, state.OutboxEntry{ID: "p-a1", Spore: "a1", From: "user:op", Text: "run the tests", At: t0.Add(-time.Minute)})
		return err
	})
	require.NoError(t, err)
	out, err := f.pass.Run(ctx, reconcile.Options{Heal: true, Deliver: true})
	require.NoError(t, err)

	dir := t.TempDir()
	path := filepath.Join(dir, "sporectl.prom")
	require.NoError(t, metrics.WriteFile(path, metrics.Textfile(&reconcile.Outcome{}, time.Second, t0.Add(-time.Hour))))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.NotZero(t, fi.Mode().Perm()&0o004, "node_exporter (another user) reads it: %s", fi.Mode())
	require.NoError(t, metrics.WriteFile(path, metrics.Textfile(out, 1500*time.Millisecond, t0)))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	fams := metricstest.Parse(t, string(b))
	require.Equal(t, 1.5, fams.Value(t, "sporectl_reconcile_duration_seconds"))
	require.Equal(t, float64(t0.Unix()), fams.Value(t, "sporectl_reconcile_timestamp_seconds"))
	require.Equal(t, 1.0, fams.Value(t, "sporectl_reconcile_delivered_messages", "colony", "a"))
	require.Equal(t, 0.0, fams.Value(t, "sporectl_reconcile_delivered_messages", "colony", "b"))
	require.Equal(t, 0.0, fams.Value(t, "sporectl_reconcile_breaker_opens", "colony", "a"))
	// The fleet's families are there too, after this run: it started bm.
	require.Equal(t, 3.0, fams.Value(t, "sporectl_spores", "colony", "a", "rank", "spore", "effective", "Healthy"))
	require.Equal(t, 1.0, fams.Value(t, "sporectl_outbox_messages", "colony", "b"))
	require.Equal(t, 0.0, fams.Value(t, "sporectl_outbox_messages", "colony", "a"))
	// No serve process counters: a cron run has none.
	require.Zero(t, fams.Series("sporectl_messages_sent_total"))

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "the temporary file is renamed, not left behind")

	t.Run("promtool", func(t *testing.T) { metricstest.Promtool(t, string(b)) })
}

// TestRunBreakerOpens: a run that opened a breaker says so for its
// colony; only deliveries that succeeded count.
func TestRunBreakerOpens(t *testing.T) {
	sp := func(id, colony string) state.Spore {
		return state.Spore{Wish: state.Wish{ID: id, Colony: colony}}
	}
	out := &reconcile.Outcome{Plans: []*reconcile.SporePlan{
		{Spore: sp("x", "c"), OpenBreaker: true},
		{Spore: sp("y", "c"), Delivered: []reconcile.Delivery{{Entry: state.OutboxEntry{ID: "1"}}, {Entry: state.OutboxEntry{ID: "2"}, Err: errors.New("refused")}}},
		{Spore: sp("z", "d")},
	}}
	fams := metricstest.Parse(t, text(t, metrics.Run(out, time.Second, t0)))
	require.Equal(t, 1.0, fams.Value(t, "sporectl_reconcile_breaker_opens", "colony", "c"))
	require.Equal(t, 0.0, fams.Value(t, "sporectl_reconcile_breaker_opens", "colony", "d"))
	require.Equal(t, 1.0, fams.Value(t, "sporectl_reconcile_delivered_messages", "colony", "c"))
}

// TestWriteFileFails: a directory that does not exist is an error naming
// the file, and nothing is written.
func TestWriteFileFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "sporectl.prom")
	err := metrics.WriteFile(path, metrics.Textfile(&reconcile.Outcome{}, 0, t0))
	require.ErrorContains(t, err, path)
	_, err = os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist)
}

// TestWriteFileAtomic: a reader that reads the file while runs replace
// it sees one whole file or the other, never part of one (what
// node_exporter's textfile collector needs).
func TestWriteFileAtomic(t *testing.T) {
	f := newFleet(t)
	out, err := f.pass.Run(context.Background(), reconcile.Options{})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "sporectl.prom")
	require.NoError(t, metrics.WriteFile(path, metrics.Textfile(out, time.Second, t0)))
	done := make(chan error, 1)
	go func() {
		for i := range 200 {
			if err := metrics.WriteFile(path, metrics.Textfile(out, time.Duration(i)*time.Millisecond, t0)); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for reads := 0; ; reads++ {
		select {
		case err := <-done:
			require.NoError(t, err)
			require.Positive(t, reads)
			return
		default:
		}
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		fams := metricstest.Parse(t, string(b))
		require.Equal(t, 1.0, fams.Value(t, "sporectl_orphans"), "read %d", reads)
	}
}
