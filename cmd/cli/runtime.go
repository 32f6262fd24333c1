package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/sporectl/sporectl/bridge/sporeenv"
	"github.com/sporectl/sporectl/local"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// Runtime returns the runtime the store's settings name, reading them
// first. Commands that run the pass get the runtime from it instead, built
// from the snapshot's settings.
func (f *Factory) Runtime(ctx context.Context, st state.Store) (reconcile.Runtime, error) {
	settings, err := state.ViewValue(ctx, st, func(tx state.Tx) (state.Settings, error) { return tx.Settings(ctx) })
	if err != nil {
		return nil, err
	}
	return f.RuntimeFor(ctx, st, settings)
}

// RuntimeFor builds the runtime settings name. Nothing is started or
// dialled until a method of the runtime is called.
func (f *Factory) RuntimeFor(ctx context.Context, st state.Store, settings state.Settings) (reconcile.Runtime, error) {
	if f.NewRuntime != nil {
		return f.NewRuntime(ctx, st, settings)
	}
	switch settings.Runtime {
	case "local", "":
		return f.localRuntime(st, settings)
	case "kube":
		return f.kubeRuntime(ctx, settings)
	}
	return nil, &state.CorruptError{File: st.Info().Location, Offset: -1, Reason: fmt.Sprintf("settings name an unknown runtime %q", settings.Runtime)}
}

// localRuntime wires the local runtime: where it keeps the store's spores
// and what their bridges inherit are its own decisions (local.Root,
// local.InheritedEnv); the CLI hands it the store, its state directory,
// its own binary (which has the bridge command), where serve listens and,
// with the gateway on, where its model gateway is.
func (f *Factory) localRuntime(st state.Store, settings state.Settings) (reconcile.Runtime, error) {
	root, err := local.Root(st.Info(), f.defaultStateDir)
	if err != nil {
		return nil, err
	}
	bin := f.Executable
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find the sporectl binary to run bridges: %w", err)
		}
		bin = exe
	}
	api := settings.APIURL
	if api == "" {
		api = "http://" + defaultServeAddr // where `sporectl serve` listens by default
	}
	cfg := local.Config{Root: root, Binary: bin, Agent: settings.Agent, APIURL: api, Env: local.InheritedEnv(os.Environ(), settings.Gateway()), Logger: f.Logger()}
	if settings.Gateway() {
		cfg.ModelURL = strings.TrimSuffix(api, "/") + sporeenv.ModelPath
	}
	return local.New(cfg)
}

// defaultServeAddr is where `sporectl serve` listens unless told, and so
// where local spores look for it unless the store's settings say.
const defaultServeAddr = "127.0.0.1:7070"
