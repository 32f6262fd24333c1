package ui

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// An export at rest (atRest) makes what an export that stamps every page
// makes, and is taken only when that is nothing: the same store, hour and
// fleet, every page there and no stamp of anything else. Each case is
// exported both ways from the same stamps.
func TestAnExportAtRestIsTheExportOfEveryPage(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.colony()
	out, err := f.h.Pass.Run(ctx, reconcile.Options{})
	require.NoError(t, err)
	files, err := Export(ctx, f.st, out.Result, t0, nil)
	require.NoError(t, err)
	prev := stampsIn(t, files)
	require.NotEmpty(t, prev[exportStamp])

	pending := out.Result
	pending.Spores = slices.Clone(pending.Spores)
	pending.Spores[1].Pending++
	orphan := out.Result
	orphan.Orphans = []string{"zombie"}
	without := func(key string) map[string]string {
		m := maps.Clone(prev)
		delete(m, key)
		return m
	}
	with := func(key, v string) map[string]string {
		m := maps.Clone(prev)
		m[key] = v
		return m
	}
	for _, tc := range []struct {
		name string
		res  reconcile.Result
		now  time.Time
		prev map[string]string
		rest bool
	}{
		{"nothing changed", out.Result, t0, prev, true},
		{"later within the hour", out.Result, t0.Add(59 * time.Minute), prev, true},
		{"an hour later", out.Result, t0.Add(time.Hour), prev, false},
		{"a spore's health", pending, t0, prev, false},
		{"an orphan", orphan, t0, prev, false},
		{"a page removed", out.Result, t0, without(ExportSpores + "/lab-a.html"), false},
		{"the index removed", out.Result, t0, without(ExportIndex), false},
		{"the stamps of an older sporectl", out.Result, t0, without(exportStamp), false},
		{"a deleted spore's page still there", out.Result, t0, with(ExportSpores+"/gone.html", "x"), false},
		{"a deleted spore's record", out.Result, t0, with(recordStamp+"gone", "x"), false},
		{"another fleet's stamp", out.Result, t0, with(exportStamp, "x"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hour := tc.now.UTC().Truncate(time.Hour)
			require.Equal(t, tc.rest, atRest(tc.prev, tc.res, fleetStamp(tc.res, hour, tc.prev[revisionStamp])))
			fast, err := Export(ctx, f.st, tc.res, tc.now, maps.Clone(tc.prev))
			require.NoError(t, err)
			exportAtRest = false
			defer func() { exportAtRest = true }()
			slow, err := Export(ctx, f.st, tc.res, tc.now, maps.Clone(tc.prev))
			require.NoError(t, err)
			require.Equal(t, slow, fast)
		})
	}

	// A write to the store, whatever it is, is another revision: the
	// records are read again, and the export is not at rest.
	require.NoError(t, f.st.Update(ctx, func(tx state.Tx) error {
		return tx.DeleteSpore(ctx, "far-x")
	}))
	out, err = f.h.Pass.Run(ctx, reconcile.Options{})
	require.NoError(t, err)
	fast, err := Export(ctx, f.st, out.Result, t0, maps.Clone(prev))
	require.NoError(t, err)
	require.NotNil(t, fast[ExportStamps])
	exportAtRest = false
	defer func() { exportAtRest = true }()
	slow, err := Export(ctx, f.st, out.Result, t0, maps.Clone(prev))
	require.NoError(t, err)
	require.Equal(t, slow, fast)
}
