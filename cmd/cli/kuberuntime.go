package cli

import (
	"context"
	"fmt"

	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// kubeRuntime resolves the cluster the way kubectl does (--kubeconfig,
// $KUBECONFIG, --context, -n, in-cluster config), with the store's
// namespace as the default.
func (f *Factory) kubeRuntime(ctx context.Context, settings state.Settings) (reconcile.Runtime, error) {
	c, err := kube.LoadCluster(kube.ConfigFlags{
		Kubeconfig:       f.Global.Kubeconfig,
		Context:          f.Global.Context,
		Namespace:        f.Global.Namespace,
		DefaultNamespace: settings.Namespace,
	})
	if err != nil {
		return nil, &RuntimeError{Op: "kube runtime", Err: fmt.Errorf("load cluster config: %w", err)}
	}
	rt, err := kube.New(c.Config, kube.OptionsFromSettings(settings, c))
	if err != nil {
		return nil, &RuntimeError{Op: "kube runtime", Err: err}
	}
	return rt, nil
}
