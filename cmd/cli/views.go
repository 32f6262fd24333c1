package cli

import (
	"context"
	"errors"
	"io/fs"
	"syscall"
	"time"

	"github.com/sporectl/sporectl/mycelia/ui"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/views"
	"github.com/sporectl/sporectl/state"
)

// viewsDir projects a pass's result into a views directory: the views of
// reconcile/views, and on a pass over the whole fleet the page's static
// export (docs/page.md "Static export").
type viewsDir struct {
	d   *views.Dir
	now func() time.Time
}

func viewsProjector(path string, now func() time.Time) reconcile.Projector {
	return viewsDir{d: &views.Dir{Path: path}, now: now}
}

func (v viewsDir) Project(ctx context.Context, st state.Store, res reconcile.Result, full bool) error {
	scope := views.Partial
	if full {
		scope = views.Full
	}
	_, err := v.d.Project(ctx, st, res, scope)
	if err := v.unwritable(err); err != nil {
		return err
	}
	if !full || ctx.Err() != nil {
		return err
	}
	files, xerr := ui.Export(ctx, st, res, v.now(), ui.ReadExportStamps(v.d.Path))
	if xerr == nil {
		_, xerr = ui.WriteExport(v.d, files)
	}
	if err := v.unwritable(xerr); err != nil {
		return err
	}
	return errors.Join(err, xerr)
}

// unwritable is err said once, as the store's (exit 6), when it says the
// views directory cannot be written at all (a read-only store, a
// directory without write permission): every view and every page of the
// export fails the same way, and nothing else of the pass needed a write
// (a pass that commits fails at the store's lock first). nil otherwise.
func (v viewsDir) unwritable(err error) error {
	if !errors.Is(err, syscall.EROFS) && !errors.Is(err, fs.ErrPermission) {
		return nil
	}
	// The first file's own error names the path; the rest repeat it.
	var first *fs.PathError
	if errors.As(err, &first) {
		err = first
	}
	return &state.UnavailableError{Op: "write the views", Err: err}
}
