package reconcile_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/state"
)

// bridgesAsked is the fake runtime, remembering whose bridge a pass
// asked for.
type bridgesAsked struct {
	*reconciletest.Runtime
	mu    sync.Mutex
	asked []string
}

func (b *bridgesAsked) Bridge(ctx context.Context, id string) (reconcile.BridgeEndpoint, error) {
	b.mu.Lock()
	b.asked = append(b.asked, id)
	b.mu.Unlock()
	return b.Runtime.Bridge(ctx, id)
}

func (b *bridgesAsked) take() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.asked
	b.asked = nil
	slices.Sort(out)
	return out
}

// TestNamedPassObservesTheNamedOnly: a pass over named spores asks the
// runtime about those spores and their bridges alone, not the fleet, and
// sees them as a pass over the fleet does; a pass over the fleet asks
// about every spore.
func TestNamedPassObservesTheNamedOnly(t *testing.T) {
	e := newEnv(t, "a", "b", "c")
	for _, id := range []string{"a", "b", "c"} {
		e.setDesired(id, state.Running)
	}
	rt := &bridgesAsked{Runtime: e.rt}
	ps := e.pass()
	ps.Runtime = func(context.Context, state.Settings) (reconcile.Runtime, error) { return rt, nil }
	ctx := context.Background()
	_, err := ps.Run(ctx, reconcile.Options{Heal: true})
	require.NoError(t, err)
	require.Equal(t, 3, e.rt.Calls("Start"))
	rt.take()

	whole, err := ps.Run(ctx, reconcile.Options{})
	require.NoError(t, err)
	require.Nil(t, e.rt.LastObserved(), "the fleet")
	require.Equal(t, []string{"a", "b", "c"}, rt.take())

	named, err := ps.Run(ctx, reconcile.Options{IDs: []string{"b"}})
	require.NoError(t, err)
	require.Equal(t, []string{"b"}, e.rt.LastObserved())
	require.Equal(t, []string{"b"}, rt.take(), "no other spore's bridge is asked")
	require.Len(t, named.Plans, 1)
	require.Equal(t, reconcile.BridgeUp, named.Plans[0].Observed.Bridge)
	require.Equal(t, whole.Plans[1].Observed, named.Plans[0].Observed, "b seen as the fleet's pass sees it")

	calls := e.rt.Calls("Observe")
	missing, err := ps.Run(ctx, reconcile.Options{IDs: []string{"nope"}})
	require.NoError(t, err)
	require.Error(t, missing.Missing)
	require.Equal(t, calls, e.rt.Calls("Observe"), "a pass over no spore of the store observes nothing")
}
