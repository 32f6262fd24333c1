package cli

import (
	"net/url"
	"os"
	"strings"

	"github.com/sporectl/sporectl/internal/quote"
	"github.com/sporectl/sporectl/mycelia"
	"github.com/sporectl/sporectl/mycelia/auth"
	"github.com/sporectl/sporectl/mycelia/gateway"
	"github.com/sporectl/sporectl/reconcile/metrics"
	"github.com/sporectl/sporectl/state"
)

// The model gateway's part of serve (docs/gateway.md): where the
// spores' model calls go (--model-upstream) and the key only serve holds
// (--model-key-file, else $ANTHROPIC_API_KEY). The address check calls the
// same model API with the same key.

var _ gateway.Metrics = (*metrics.Process)(nil)

// modelOptions are serve's model flags and what validate made of them.
type modelOptions struct {
	Upstream string
	KeyFile  string

	upstream *url.URL
	key      string // never printed
	keyFrom  string // where key came from, for serve's first lines
}

// defaultUpstream is --model-upstream's default: $ANTHROPIC_BASE_URL of
// serve's environment when set (as the address check read it before
// the gateway), else Anthropic's API.
func defaultUpstream(getenv func(string) string) string {
	if u := getenv(mycelia.EnvAnthropicURL); u != "" {
		return u
	}
	return mycelia.DefaultAnthropicURL
}

// validate parses the upstream and reads the key: a key file that cannot
// be read or holds nothing is a usage error naming the flag (not the
// key), so serve never starts with a key it was not meant to use.
func (m *modelOptions) validate(getenv func(string) string) error {
	raw := m.Upstream
	if raw == "" {
		raw = defaultUpstream(getenv)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return usageErrorf("invalid value %s for --model-upstream: want the model API's base URL, e.g. %s", quote.Value(redactedURL(raw)), mycelia.DefaultAnthropicURL)
	}
	m.upstream = u
	if m.KeyFile != "" {
		b, err := os.ReadFile(m.KeyFile)
		if err != nil {
			return usageErrorf("--model-key-file %s cannot be read: %v", quote.Value(m.KeyFile), pathErr(err))
		}
		m.key, m.keyFrom = strings.TrimSpace(string(b)), "--model-key-file"
		if m.key == "" {
			return usageErrorf("--model-key-file %s is empty: it must hold the model API's key", quote.Value(m.KeyFile))
		}
		return nil
	}
	if m.key = strings.TrimSpace(getenv(mycelia.EnvAnthropicKey)); m.key != "" {
		m.keyFrom = "$" + mycelia.EnvAnthropicKey
	}
	return nil
}

// pathErr is err without the path (the message names the flag's value
// already).
func pathErr(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// gateway is serve's model gateway over st, asking authn (the API's)
// who calls; a serve made without validate (tests of other surfaces)
// forwards to Anthropic's API with no key, refusing every call.
func (o *serveOptions) gateway(st state.Store, authn *auth.Authenticator) *gateway.Gateway {
	cfg := gateway.Config{Store: st, Upstream: o.Model.upstream, Key: o.Model.key, Logger: o.f.Logger(), Now: o.f.Now}
	if authn != nil {
		cfg.Auth = *authn
	} else {
		cfg.Auth = auth.Authenticator{Store: st, Now: o.f.Now}
	}
	if cfg.Upstream == nil {
		cfg.Upstream, _ = url.Parse(mycelia.DefaultAnthropicURL)
	}
	if o.proc != nil {
		cfg.Metrics = o.proc
	}
	return gateway.New(cfg)
}

// getenv is serve's environment as the address check reads it: the
// model's key and base URL are the gateway's.
func (m *modelOptions) getenv(getenv func(string) string) func(string) string {
	return func(name string) string {
		switch name {
		case mycelia.EnvAnthropicKey:
			return m.key
		case mycelia.EnvAnthropicURL:
			return m.upstream.String()
		}
		return getenv(name)
	}
}

// line is serve's line about the gateway: where it answers, where it
// forwards, and whether it holds a key (never the key).
func (m *modelOptions) line(base string) string {
	key := "its key from " + m.keyFrom
	if m.key == "" {
		key = "no key (--model-key-file or $" + mycelia.EnvAnthropicKey + "): every model call is refused"
	}
	return "serving the model gateway on " + base + gateway.Prefix + "/ to " + m.upstream.Redacted() + ", " + key
}

func redactedURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return "(not a URL)"
}
