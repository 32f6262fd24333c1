package cli

import (
	"context"
	"fmt"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

func (f *Factory) kubeRuntime(ctx context.Context, settings state.Settings) (reconcile.Runtime, error) {
	return nil, &state.UnavailableError{Op: "kube runtime", Err: fmt.Errorf("not available in this build")}
}
