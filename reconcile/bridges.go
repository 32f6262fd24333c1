package reconcile

import (
	"context"
	"errors"
	"time"
	"unicode/utf8"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/reconcile/transcript"
)

// BridgeClient is what a pass asks of one bridge. *bridge.Client
// implements it; tests use fakes.
type BridgeClient interface {
	Status(ctx context.Context) (bridge.Status, error)
	Events(ctx context.Context, after uint64, limit int, wait time.Duration) (bridge.Events, error)
	Prompt(ctx context.Context, p bridge.PromptRequest) (bridge.PromptAccepted, error)
}

// Dialer turns an endpoint into a client.
type Dialer func(ep BridgeEndpoint) (BridgeClient, error)

// DialHTTP is the Dialer for real bridges.
func DialHTTP(ep BridgeEndpoint) (BridgeClient, error) {
	return bridge.NewClient(ep.BaseURL, ep.Token, ep.Client)
}

var _ BridgeClient = (*bridge.Client)(nil)

// statusText is a text of a bridge's status as a pass keeps it: the
// bridge is the agent's, so it is cut to bridge.MaxStatusText bytes and
// every control character, ANSI escape and bidirectional override in it
// is written visibly (an ESC as \x1b), never passed on raw.
func statusText(s string) string { return untrustedText(s, bridge.MaxStatusText) }

// untrustedText is words a bridge said, or that quote it, as a pass keeps
// them: every control character, ANSI escape and bidirectional override
// written visibly (transcript.Sanitize: one line, valid UTF-8), then cut
// at a character's start to at most max bytes, "…" included.
func untrustedText(s string, max int) string {
	s = transcript.Sanitize(s)
	if len(s) <= max {
		return s
	}
	cut := max - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// maxBreachText bounds the words kept of a breach.
const maxBreachText = 512

// breachText says how err broke the bridge's contract, "" when it is no
// breach: sporectl's words, bounded and sanitised all the same.
func breachText(err error) string {
	var be *bridge.BreachError
	if !errors.As(err, &be) {
		return ""
	}
	return untrustedText(be.Route+": "+be.What, maxBreachText)
}
