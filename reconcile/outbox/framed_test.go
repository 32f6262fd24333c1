package outbox_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/reconcile/outbox"
	"github.com/sporectl/sporectl/state"
)

// TestSendRefusesFramedTooLarge: a prompt under the bridge's bound whose
// framed text is over it (each "[from" rewritten as "[quoted: from") is
// refused when it is sent, and nothing is recorded; one whose framed
// text fits is taken.
func TestSendRefusesFramedTooLarge(t *testing.T) {
	e := newEnv(t, "a")
	e.change("a", func(sp *state.Spore) { sp.Desired = state.Running })
	before := len(e.events("a"))
	text := strings.Repeat("[from x ", 261000/8)
	require.Less(t, len(text), bridge.MaxPromptBytes)
	m := outbox.Message{To: "a", From: "user:test", Kind: state.KindPrompt, Text: text}
	_, err := outbox.Send(context.Background(), e.st, m, e.now)
	var tl *outbox.TooLargeError
	require.ErrorAs(t, err, &tl)
	require.Equal(t, len(text), tl.Text)
	require.Greater(t, tl.Framed, bridge.MaxPromptBytes)
	require.Equal(t, bridge.MaxPromptBytes, tl.Max)
	require.Equal(t, tl, outbox.CheckFramed(m), "the check a sender makes before writing says the same")
	require.Empty(t, e.pending("a"))
	require.Len(t, e.events("a"), before, "nothing was recorded")

	m.Text = strings.Repeat("[from x ", 100000/8)
	require.Nil(t, outbox.CheckFramed(m))
	_, err = outbox.Send(context.Background(), e.st, m, e.now)
	require.NoError(t, err)
	require.Len(t, e.pending("a"), 1)
}
