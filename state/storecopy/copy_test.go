package storecopy_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/pgstore"
	"github.com/sporectl/sporectl/state/pgstore/pgtest"
	"github.com/sporectl/sporectl/state/statetest"
	"github.com/sporectl/sporectl/state/storecopy"
	"github.com/sporectl/sporectl/state/storetest"
)

// backend makes a fresh, initialised, empty store of one kind.
type backend struct {
	name string
	open func(t *testing.T) state.Store
}

func pgBackend() backend {
	return backend{"postgres", func(t *testing.T) state.Store {
		url := pgtest.NewDatabase(t)
		s, _, err := pgstore.Init(context.Background(), url, state.Settings{Runtime: "local"}, pgstore.Options{})
		require.NoError(t, err)
		statetest.CheckOnCleanup(t, s)
		return s
	}}
}

// TestCopyRoundTrip copies A→B and back B→C for every pair of backends
// and compares everything each store holds.
func TestCopyRoundTrip(t *testing.T) {
	for _, a := range backends() {
		for _, b := range backends() {
			t.Run(a.name+"→"+b.name+"→"+a.name, func(t *testing.T) {
				ctx := context.Background()
				src, mid, back := a.open(t), b.open(t), a.open(t)
				fill(t, src)
				want := read(t, src)
				require.Len(t, want.Events["worker-2"], 12015, "the fixture is what the test expects")

				require.NoError(t, storecopy.Copy(ctx, src, mid))
				require.NotEmpty(t, want.Dead, "the seed has a dead letter")
				requireSame(t, want, read(t, mid), a.name+" → "+b.name)
				require.NoError(t, storecopy.Copy(ctx, mid, back))
				requireSame(t, want, read(t, back), b.name+" → "+a.name)
				for _, s := range []state.Store{src, mid, back} {
					rep, err := s.Check(ctx)
					require.NoError(t, err)
					require.True(t, rep.OK(), "%v", rep.Problems)
				}
			})
		}
	}
}

// TestCopyRefusesNonEmptyDestination: a copy is not a merge; the
// destination is left exactly as it was.
func TestCopyRefusesNonEmptyDestination(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			ctx := context.Background()
			src, dst := pgBackend().open(t), b.open(t)
			fill(t, src)
			require.NoError(t, dst.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, storetest.Spore("already")) }))
			before := read(t, dst)
			err := storecopy.Copy(ctx, src, dst)
			require.ErrorIs(t, err, storecopy.ErrNotEmpty)
			requireSame(t, before, read(t, dst), "destination after a refused copy")
		})
	}
}
