package cli

import (
	"context"
	"errors"
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
	if !full || ctx.Err() != nil {
		return err
	}
	files, xerr := ui.Export(ctx, st, res, v.now(), ui.ReadExportStamps(v.d.Path))
	if xerr == nil {
		_, xerr = ui.WriteExport(v.d, files)
	}
	return errors.Join(err, xerr)
}
