package wish_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/pgstore/pgtest"
	"github.com/sporectl/sporectl/state/statetest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopLazy()
	os.Exit(code)
}

var now = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

var settings = state.Settings{Runtime: "local", Image: "img:1", DefaultSpec: state.Spec{CPU: "1", Memory: "1Gi", Storage: "2Gi"}}

// backends are the stores every transition is tested on: the directory
// store, and PostgreSQL (skipped without a server, failing when CI is
// set). Each store is checked for consistency when its test ends.
var backends = []struct {
	name string
	open func(t *testing.T) state.Store
}{
	{"dir", func(t *testing.T) state.Store { return statetest.Dir(t, settings) }},
	{"pg", func(t *testing.T) state.Store { st, _ := statetest.Postgres(t, settings); return st }},
}

// eachBackend runs fn as a subtest on every backend's fresh store.
func eachBackend(t *testing.T, fn func(t *testing.T, st state.Store)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { fn(t, b.open(t)) })
	}
}

// put writes the given spores as they are (no event, generation as given).
func put(t *testing.T, st state.Store, spores ...state.Spore) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, st.Update(ctx, func(tx state.Tx) error {
		for _, sp := range spores {
			if sp.Colony == "" {
				sp.Colony = "lab"
			}
			if sp.Rank == "" {
				sp.Rank = state.RankSpore
			}
			if sp.Desired == "" {
				sp.Desired = state.Paused
			}
			sp.Created, sp.Updated = now.Add(-time.Hour), now.Add(-time.Hour)
			if err := tx.CreateSpore(ctx, sp); err != nil {
				return err
			}
		}
		return nil
	}))
}

func read(t *testing.T, st state.Store, id string) (state.Spore, []state.Event) {
	t.Helper()
	ctx := context.Background()
	var sp state.Spore
	var evs []state.Event
	require.NoError(t, st.View(ctx, func(tx state.Tx) error {
		var err error
		if sp, err = tx.Spore(ctx, id); err != nil {
			return err
		}
		evs, err = tx.Events(ctx, id, 0, 0)
		return err
	}))
	return sp, evs
}

// update runs fn in one read-write transaction.
func update(st state.Store, fn func(ctx context.Context, tx state.Tx) error) error {
	ctx := context.Background()
	return st.Update(ctx, func(tx state.Tx) error { return fn(ctx, tx) })
}
