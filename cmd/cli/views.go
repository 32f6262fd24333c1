package cli

import (
	"context"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/views"
	"github.com/sporectl/sporectl/state"
)

// viewsDir projects a pass's result into a views directory.
type viewsDir struct{ d *views.Dir }

func viewsProjector(path string) reconcile.Projector { return viewsDir{&views.Dir{Path: path}} }

func (v viewsDir) Project(ctx context.Context, st state.Store, res reconcile.Result, full bool) error {
	scope := views.Partial
	if full {
		scope = views.Full
	}
	_, err := v.d.Project(ctx, st, res, scope)
	return err
}
