package metrics

import (
	"bytes"
	"fmt"
	"path/filepath"
	"time"

	"github.com/google/renameio/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/sporectl/sporectl/reconcile"
)

// Textfile is a reconcile run's textfile: the fleet's families from its
// outcome and the run's own, at finished.
func Textfile(out *reconcile.Outcome, took time.Duration, finished time.Time) prometheus.Gatherer {
	reg := prometheus.NewRegistry()
	reg.MustRegister(Fleet(out, finished), Run(out, took, finished))
	return reg
}

// WriteFile writes g's families to path in the text format, as
// node_exporter's textfile collector reads it (docs/metrics.md
// "The textfile"): to a temporary file in path's directory, synced, then
// renamed over path, so a reader sees the old file or the new one, never
// half of one. The directory itself is not synced: a crash may bring the
// previous run's file back, which the next run replaces.
func WriteFile(path string, g prometheus.Gatherer) error {
	mfs, err := g.Gather()
	if err != nil {
		return fmt.Errorf("gather the metrics for %s: %w", path, err)
	}
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return fmt.Errorf("encode the metrics for %s: %w", path, err)
		}
	}
	if err := renameio.WriteFile(path, b.Bytes(), 0o644, renameio.WithTempDir(filepath.Dir(path))); err != nil {
		return fmt.Errorf("write the metrics file %s: %w", path, err)
	}
	return nil
}
