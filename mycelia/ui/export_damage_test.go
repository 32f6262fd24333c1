package ui

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/views"
	"github.com/sporectl/sporectl/state"
)

// damagedLogStore is a store in which one spore's event log does not
// read (a line edited after it was written).
type damagedLogStore struct {
	state.Store
	id string
}

func (s damagedLogStore) View(ctx context.Context, fn func(state.Tx) error) error {
	return s.Store.View(ctx, func(tx state.Tx) error { return fn(damagedLogTx{Tx: tx, id: s.id}) })
}

type damagedLogTx struct {
	state.Tx
	id string
}

func (t damagedLogTx) Events(ctx context.Context, id string, after uint64, limit int) ([]state.Event, error) {
	if id == t.id {
		return nil, &state.CorruptError{File: "events/" + id + ".1.log", Line: 2, Reason: "checksum mismatch (the line was torn or edited)"}
	}
	return t.Tx.Events(ctx, id, after, limit)
}

// A spore whose log does not read keeps the page it had, and every other
// spore's page is written: before, the whole export (and so the pass
// that projects it, `reconcile` exiting 7) failed on that one spore.
func TestExportKeepsADamagedSporesPageAndWritesTheOthers(t *testing.T) {
	f := newFixture(t)
	f.colony()
	dir := &views.Dir{Path: t.TempDir()}
	_, err := WriteExport(dir, f.export(t0))
	require.NoError(t, err)
	before := ReadExportStamps(dir.Path)
	require.Contains(t, before, "spores/lab-a.html")

	// lab-a's log no longer reads, and it died: the fleet's page changes.
	f.rt.Kill("lab-a", "OOMKilled")
	out, err := f.h.Pass.Run(context.Background(), reconcile.Options{})
	require.NoError(t, err)
	files, err := Export(context.Background(), damagedLogStore{Store: f.st, id: "lab-a"}, out.Result, t0, before)
	require.NoError(t, err, "one spore's damage must not fail the export")
	require.Contains(t, files, "spores/lab-a.html")
	require.Nil(t, files["spores/lab-a.html"], "the damaged spore's page is kept as it was")
	require.NotNil(t, files[ExportIndex], "the fleet's page is written")
	require.Contains(t, files, "spores/lab-c.html", "the other spores' pages are made")
	written, err := WriteExport(dir, files)
	require.NoError(t, err)
	require.NotContains(t, written, "spores/lab-a.html")
	require.FileExists(t, filepath.Join(dir.Path, "spores", "lab-a.html"))
	after := ReadExportStamps(dir.Path)
	require.Equal(t, before["spores/lab-a.html"], after["spores/lab-a.html"], "its stamp is the page's, so a later export makes it again when it changes")
}
