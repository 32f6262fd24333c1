package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sporectl/sporectl/bridge/sporeenv"
)

// ErrNoToken: the bridge refuses to serve without a token.
var ErrNoToken = errors.New("no bridge token")

// LoadToken returns the token from env (when non-empty), else from the
// home's token file. The error never contains the token.
func LoadToken(home, env string) (string, error) {
	if t := strings.TrimSpace(env); t != "" {
		return t, nil
	}
	path := filepath.Join(stateDir(home), tokenName)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%w: set %s or write the token to %s", ErrNoToken, sporeenv.BridgeToken, path)
	}
	if err != nil {
		return "", fmt.Errorf("read bridge token %s: %w", path, err)
	}
	t := strings.TrimSpace(string(b))
	if t == "" {
		return "", fmt.Errorf("%w: %s is empty", ErrNoToken, path)
	}
	return t, nil
}
