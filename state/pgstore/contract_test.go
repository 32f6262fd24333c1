package pgstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/pgstore"
	"github.com/sporectl/sporectl/state/pgstore/pgtest"
	"github.com/sporectl/sporectl/state/storetest"
)

// newStore initialises a store in a fresh database.
func newStore(t *testing.T) *pgstore.Store {
	t.Helper()
	s, _ := newStoreURL(t)
	return s
}

// newStoreURL also returns the database's URL, for tests that reach
// behind the store.
func newStoreURL(t *testing.T) (*pgstore.Store, string) {
	t.Helper()
	url := pgtest.NewDatabase(t)
	s, created, err := pgstore.Init(context.Background(), url, state.Settings{Runtime: "local"}, pgstore.Options{})
	require.NoError(t, err)
	require.True(t, created)
	t.Cleanup(func() { _ = s.Close() })
	return s, url
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) state.Store { return newStore(t) })
}

// TestContractShared: the cases that need a second handle on one store,
// as a second serve replica has.
func TestContractShared(t *testing.T) {
	storetest.RunShared(t, func(t *testing.T) (state.Store, storetest.Reopen) {
		s, url := newStoreURL(t)
		return s, func(t *testing.T) state.Store {
			o, err := pgstore.Open(t.Context(), url, pgstore.Options{})
			require.NoError(t, err)
			t.Cleanup(func() { _ = o.Close() })
			return o
		}
	})
}
