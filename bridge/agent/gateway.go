package agent

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/sporectl/sporectl/bridge/sporeenv"
)

// Gateway is how an agent reaches the model when the store's gateway is on
// (docs/security.md "Secrets"): through serve's /model, with the spore's
// own credential. The model's key stays with serve; what the agent holds
// is worth only what serve lets this spore do, and is refused once the
// spore is slept, stopped or its token rotated.
type Gateway struct {
	// URL is the gateway's base URL, given to Claude Code as
	// ANTHROPIC_BASE_URL.
	URL string
	// Key is the spore's model credential, "ID:TOKEN" (its id and its
	// API token), given to Claude Code as ANTHROPIC_API_KEY.
	Key string
}

// ErrNoAPIToken: the gateway is on but the spore has no API token to
// present to it.
var ErrNoAPIToken = errors.New("no API token for the model gateway")

// GatewayFromEnv is the gateway the spore's environment names
// (sporeenv.ModelURL), with the key made of its id (sporeenv.SporeID) and
// API token (sporeenv.APIToken, else home's sporeenv.APITokenFile); nil
// when the gateway is off. A bridge told to use the gateway without the
// means to must not start: its agent would fail every turn, or reach for
// a key it should not have. No error holds the token.
func GatewayFromEnv(getenv func(string) string, home string) (*Gateway, error) {
	raw := getenv(sporeenv.ModelURL)
	if raw == "" {
		return nil, nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		// Not quoted: a URL with user info would carry a password.
		return nil, fmt.Errorf("%s must be an http(s) URL with a host and no user info", sporeenv.ModelURL)
	}
	id := getenv(sporeenv.SporeID)
	if id == "" || strings.ContainsAny(id, ": \t\r\n") {
		return nil, fmt.Errorf("%s is set but %s is not a spore id: the model key is the spore's id and token", sporeenv.ModelURL, sporeenv.SporeID)
	}
	token := strings.TrimSpace(getenv(sporeenv.APIToken))
	if token == "" {
		path := filepath.Join(home, sporeenv.APITokenFile)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%w: %s is not set and %s cannot be read: %v", ErrNoAPIToken, sporeenv.APIToken, path, errors.Unwrap(err))
		}
		if token = strings.TrimSpace(string(b)); token == "" {
			return nil, fmt.Errorf("%w: %s is empty", ErrNoAPIToken, path)
		}
	}
	return &Gateway{URL: strings.TrimSuffix(raw, "/"), Key: id + ":" + token}, nil
}

// env is what the agent is given to reach the gateway.
func (g *Gateway) env() []string {
	return []string{"ANTHROPIC_BASE_URL=" + g.URL, "ANTHROPIC_API_KEY=" + g.Key}
}

// ModelVar reports whether an environment variable of that name tells
// Claude Code where the model is or how to authenticate to it: what the
// gateway replaces, so an agent behind it is given none of them but the
// gateway's own, and what the local runtime does not pass on to a bridge
// then. Every ANTHROPIC_* is one (a key, a token, a base URL, custom
// headers, the model names go with the endpoint); so are Claude Code's
// subscription token and its switches to other providers, which would
// route around the gateway.
func ModelVar(name string) bool {
	switch {
	case strings.HasPrefix(name, "ANTHROPIC_"),
		strings.HasPrefix(name, "CLAUDE_CODE_USE_"), // _BEDROCK, _VERTEX, _FOUNDRY
		strings.HasPrefix(name, "CLAUDE_CODE_SKIP_") && strings.HasSuffix(name, "_AUTH"),
		name == "CLAUDE_CODE_OAUTH_TOKEN",
		name == "CLAUDE_CODE_API_KEY_HELPER_TTL_MS",
		name == "AWS_BEARER_TOKEN_BEDROCK":
		return true
	}
	return false
}
