package reconcile_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/state"
)

// compacter adds the bridge's compact to a fake bridge.
type compacter struct{ *reconciletest.Bridge }

func (c compacter) Compact(ctx context.Context) (bridge.PromptAccepted, error) {
	return c.Prompt(ctx, bridge.PromptRequest{ID: "compact-1", From: "bridge:compact", Text: "/compact"})
}

func TestCompact(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, "a")
	ps := e.pass()
	_, err := ps.Compact(ctx, "ghost")
	require.ErrorIs(t, err, state.ErrNotFound)
	_, err = ps.Compact(ctx, "a")
	require.Error(t, err, "no bridge yet")

	require.NoError(t, e.rt.Start(ctx, state.Spore{Wish: state.Wish{ID: "a"}}, reconcile.Launch{Creds: reconcile.Credentials{}}))
	_, err = ps.Compact(ctx, "a")
	require.ErrorIs(t, err, reconcile.ErrCannotCompact, "the fake bridge has no compact")

	ps.Dial = func(ep reconcile.BridgeEndpoint) (reconcile.BridgeClient, error) {
		c, err := e.rt.Dial(ep)
		if err != nil {
			return nil, err
		}
		return compacter{c.(*reconciletest.Bridge)}, nil
	}
	a, err := ps.Compact(ctx, "a")
	require.NoError(t, err)
	require.Equal(t, "compact-1", a.ID)
	require.Equal(t, "/compact", e.rt.BridgeOf("a").Prompts()[0].Text)
	require.Zero(t, e.st.Updates.Load(), "compact writes nothing")
}
