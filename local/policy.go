package local

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"strings"

	"github.com/sporectl/sporectl/bridge/agent"
	"github.com/sporectl/sporectl/bridge/sporeenv"
	"github.com/sporectl/sporectl/state"
)

// The runtime's own decisions about where a colony's spores live on this
// machine and what their bridges inherit; the CLI hands it the store, its
// state directory and its environment (docs/runtimes.md "Local runtime").

// Root is where the runtime keeps the files of store's spores (Config.Root:
// homes/, run/). For a directory store, the store's own directory: the
// files sit beside the store's (they are not part of its format, and
// check ignores them). For any other backend, a directory of its own
// under stateDir (sporectl's directory under the user's state home, asked
// only then), named by the store: two colonies on this machine must not
// share homes, because their spores may share an id.
func Root(store state.Info, stateDir func() (string, error)) (string, error) {
	if store.Backend == "dir" {
		return store.Location, nil
	}
	loc, err := stateDir()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(store.Backend + "\x00" + store.Location))
	return filepath.Join(loc, "local", hex.EncodeToString(sum[:6])), nil
}

// InheritedEnv is what a bridge inherits of env, the environment of the
// command that starts it (Config.Env): how to run Claude Code (its
// binary, whether to start it before a prompt) and, in
// direct mode, reach the model; nothing else (no credential of the
// person's, no store URL). Behind the gateway (gateway true) no model
// variable (agent.ModelVar: every ANTHROPIC_*, the subscription token, the
// switches to other providers) passes: the spore reaches the model through
// serve with its own token, and the key stays with serve. Claude Code's
// other CLAUDE_* settings pass in both modes.
func InheritedEnv(env []string, gateway bool) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if gateway && agent.ModelVar(k) {
			continue
		}
		switch {
		case strings.HasPrefix(k, "ANTHROPIC_"), strings.HasPrefix(k, "CLAUDE_"), k == sporeenv.ClaudeBin, k == sporeenv.BridgePrestart,
			k == "HTTPS_PROXY", k == "HTTP_PROXY", k == "NO_PROXY", k == "LANG", k == "TZ":
			out = append(out, kv)
		}
	}
	return out
}
