package ui

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// A spore's line stamp is made from its health (every field of it:
// reconcile's TestHealthDigestHasEveryField) and its page's stamp.
func TestLineStampsHaveTheWholeHealth(t *testing.T) {
	var h reconcile.SporeHealth
	base := lineStamp(&h, "page")
	require.NotEqual(t, base, lineStamp(&h, "another page"))
	h.Held = 1
	require.NotEqual(t, base, lineStamp(&h, "page"))
}

// A change of the pending count alone, which the index shows and the
// health's JSON does not, renders the index again; nothing else is.
func TestPendingAloneRendersTheIndexAgain(t *testing.T) {
	f := newFixture(t)
	f.colony()
	out, err := f.h.Pass.Run(context.Background(), reconcile.Options{})
	require.NoError(t, err)
	files, err := Export(context.Background(), f.st, out.Result, t0, nil)
	require.NoError(t, err)
	prev := stampsIn(t, files)

	again, err := Export(context.Background(), f.st, out.Result, t0, prev)
	require.NoError(t, err)
	require.Nil(t, again[ExportIndex], "nothing changed")
	require.Nil(t, again[ExportStamps], "nor the stamps")

	res := out.Result
	res.Spores = append([]reconcile.SporeHealth(nil), res.Spores...)
	res.Spores[0].Pending++
	changed, err := Export(context.Background(), f.st, res, t0, prev)
	require.NoError(t, err)
	require.NotNil(t, changed[ExportIndex])
	require.NotNil(t, changed[ExportStamps])
	for rel, b := range changed {
		if rel != ExportIndex && rel != ExportStamps && strings.HasPrefix(rel, ExportSpores+"/") {
			require.Nil(t, b, "%s is not rendered again", rel)
		}
	}
}

// stampsIn reads the stamps an export made.
func stampsIn(t *testing.T, files map[string][]byte) map[string]string {
	t.Helper()
	var stamps map[string]string
	require.NoError(t, json.Unmarshal(files[ExportStamps], &stamps))
	return stamps
}

// An export of a store at the revision its stamps were made at reads no
// record and renders nothing; a change of one record makes the next read
// them all again and render that spore's page (and the index) alone; and
// stamps that lack a record's digest are not trusted to stand for it.
func TestAnExportAtTheSameRevisionReadsNoRecord(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.colony()
	out, err := f.h.Pass.Run(ctx, reconcile.Options{})
	require.NoError(t, err)
	files, err := Export(ctx, f.st, out.Result, t0, nil)
	require.NoError(t, err)
	prev := stampsIn(t, files)
	require.NotEmpty(t, prev[revisionStamp])

	reads := &statetest.Reads{Store: f.st}
	again, err := Export(ctx, reads, out.Result, t0, prev)
	require.NoError(t, err)
	require.Zero(t, reads.Records.Load(), "records read at the same revision")
	require.Zero(t, reads.Fleet.Load(), "fleet reads at the same revision")
	for rel, b := range again {
		if !strings.HasPrefix(rel, ExportStatic+"/") {
			require.Nil(t, b, "%s is not rendered again", rel)
		}
	}

	// Stamps without a record's digest: the records are read again.
	partial := maps.Clone(prev)
	delete(partial, recordStamp+"lab-b")
	reads.Reset()
	_, err = Export(ctx, reads, out.Result, t0, partial)
	require.NoError(t, err)
	require.Positive(t, reads.Fleet.Load(), "a record's digest missing")

	require.NoError(t, f.st.Update(ctx, func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, "lab-b")
		if err != nil {
			return err
		}
		w := sp.Wish
		w.Role, w.Generation = "reviewer", sp.Generation+1
		return tx.PutWish(ctx, w)
	}))
	out, err = f.h.Pass.Run(ctx, reconcile.Options{})
	require.NoError(t, err)
	reads.Reset()
	changed, err := Export(ctx, reads, out.Result, t0, prev)
	require.NoError(t, err)
	require.Positive(t, reads.Fleet.Load(), "the store changed: the records are read")
	next := stampsIn(t, changed)
	require.NotEqual(t, prev[revisionStamp], next[revisionStamp])
	require.NotEqual(t, prev[recordStamp+"lab-b"], next[recordStamp+"lab-b"])
	require.NotNil(t, changed[ExportIndex])
	require.NotNil(t, changed[ExportSpores+"/lab-b.html"])
	for _, id := range []string{"arch", "lab-a", "lab-c", "far-x"} {
		require.Equal(t, prev[recordStamp+id], next[recordStamp+id], id)
		require.Nil(t, changed[ExportSpores+"/"+id+".html"], "%s is not rendered again", id)
	}
}
