package reconcile

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
)

// A bridge's status texts are kept bounded and with every control
// character, escape and bidirectional override written visibly.
func TestStatusTextIsBoundedAndVisible(t *testing.T) {
	require.Equal(t, "abc-123", statusText("abc-123"))
	got := statusText("s\x1b[2J\u202eid")
	require.NotContains(t, got, "\x1b")
	require.NotContains(t, got, "\u202e")
	require.Contains(t, got, `\x1b`)
	long := statusText(strings.Repeat("é", bridge.MaxStatusText))
	require.LessOrEqual(t, len(long), bridge.MaxStatusText+len("…"))
	require.True(t, strings.HasSuffix(long, "…"))
}

func TestBreachText(t *testing.T) {
	require.Empty(t, breachText(nil))
	require.Empty(t, breachText(errors.New("connection refused")))
	got := breachText(&bridge.BreachError{Route: "GET /v1/events", What: "x\u202e" + strings.Repeat("y", 2*maxBreachText)})
	require.True(t, strings.HasPrefix(got, "GET /v1/events: x"))
	require.NotContains(t, got, "\u202e")
	require.Less(t, len(got), maxBreachText+32)
}
