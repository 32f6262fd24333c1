package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
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

func (f *Factory) localRuntime(st state.Store, settings state.Settings) (reconcile.Runtime, error) {
	root := st.Info().Location
	if st.Info().Backend != "dir" {
		// One directory per store: two colonies on this machine must not
		// share homes because their spores share an id.
		loc, err := f.defaultStateDir()
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256([]byte(st.Info().Backend + "\x00" + st.Info().Location))
		root = filepath.Join(loc, "local", hex.EncodeToString(sum[:6]))
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
	return local.New(local.Config{Root: root, Binary: bin, Agent: settings.Agent, APIURL: api, Env: bridgeEnv(os.Environ()), Logger: f.Logger()})
}

// bridgeEnv is what a local bridge inherits from the command that starts
// it: how to run Claude Code and reach the model, nothing else.
func bridgeEnv(env []string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "ANTHROPIC_"), strings.HasPrefix(k, "CLAUDE_"), k == sporeenv.ClaudeBin,
			k == "HTTPS_PROXY", k == "HTTP_PROXY", k == "NO_PROXY", k == "LANG", k == "TZ":
			out = append(out, kv)
		}
	}
	return out
}

// defaultServeAddr is where `sporectl serve` listens unless told, and so
// where local spores look for it unless the store's settings say.
const defaultServeAddr = "127.0.0.1:7070"
