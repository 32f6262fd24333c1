// Package statetest makes and reads stores for the tests of the packages
// above state: a directory store or a PostgreSQL database whose
// consistency check runs when its test ends and fails the test (as bbolt's
// test helper checks its file after every test), the same check for a
// store something else made (`sporectl init` in a command's test), a
// store that counts its write transactions, and reads of one value. Tests
// only: nothing outside a _test.go file imports it.
//
// It lives under state, not in reconcile/reconciletest (the fakes of the
// runtime and the bridges), because it knows stores and nothing of the
// pass: the tests of state/storecopy and reconcile/wish use it without
// linking the pass. It is not state/storetest, the contract suite, which
// must not depend on a backend.
package statetest

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
	"github.com/sporectl/sporectl/state/pgstore"
	"github.com/sporectl/sporectl/state/pgstore/pgtest"
)

// CheckTimeout bounds the check at a test's end.
const CheckTimeout = 2 * time.Minute

// Dir is a fresh directory store in tb's temporary directory, initialised
// with settings, checked and closed when tb ends.
func Dir(tb testing.TB, settings state.Settings) *dirstore.Store {
	tb.Helper()
	return DirAt(tb, filepath.Join(tb.TempDir(), "store"), settings)
}

// DirAt is Dir at root, for a test that names the store's path (a
// command line that is given it).
func DirAt(tb testing.TB, root string, settings state.Settings) *dirstore.Store {
	tb.Helper()
	ds, _, err := dirstore.Init(context.Background(), root, settings, dirstore.Options{})
	if err != nil {
		tb.Fatalf("init a directory store at %s: %v", root, err)
	}
	CheckOnCleanup(tb, ds)
	return ds
}

// Postgres is a fresh database on the test binary's PostgreSQL server
// (pgtest.Lazy: skipped without one, failing when $CI is set), initialised
// with settings, checked, closed and dropped when tb ends; url is the
// database's, for a test that opens more pools on it. The package's
// TestMain calls pgtest.StopLazy after m.Run.
func Postgres(tb testing.TB, settings state.Settings) (st *pgstore.Store, url string) {
	tb.Helper()
	ctx := context.Background()
	srv := pgtest.Lazy(tb)
	name, url, err := srv.CreateDatabase(ctx)
	if err != nil {
		tb.Fatalf("create a test database: %v", err)
	}
	tb.Cleanup(func() {
		if err := srv.DropDatabase(context.Background(), name); err != nil {
			tb.Errorf("drop test database %s: %v", name, err)
		}
	})
	ps, _, err := pgstore.Init(ctx, url, settings, pgstore.Options{})
	if err != nil {
		tb.Fatalf("init the PostgreSQL store: %v", err)
	}
	CheckOnCleanup(tb, ps)
	return ps, url
}

// CheckOnCleanup runs st's consistency check when tb ends and fails tb
// if the check cannot run or finds a problem (notes, states the format
// allows, pass), then closes st. Cleanups run last-registered first, so
// servers and passes a test starts after making its store are stopped
// before the check reads it.
func CheckOnCleanup(tb testing.TB, st state.Store) {
	tb.Helper()
	tb.Cleanup(func() {
		check(tb, st)
		if err := st.Close(); err != nil {
			tb.Errorf("close the %s store: %v", st.Info().Backend, err)
		}
	})
}

// CheckDirOnCleanup is CheckOnCleanup for the directory store at root
// that something else made (`sporectl init` in a command's test): opened
// when tb ends, checked and closed. A root that does not exist by then
// fails tb too: the test meant to make a store there.
func CheckDirOnCleanup(tb testing.TB, root string) {
	tb.Helper()
	checkMadeOnCleanup(tb, "the store at "+root, func(ctx context.Context) (state.Store, error) {
		return dirstore.Open(ctx, root, dirstore.Options{})
	})
}

// CheckPostgresOnCleanup is CheckDirOnCleanup for the PostgreSQL store at
// url. Register it after the database's own cleanup (pgtest.NewDatabase),
// so that it runs before the database is dropped.
func CheckPostgresOnCleanup(tb testing.TB, url string) {
	tb.Helper()
	checkMadeOnCleanup(tb, "the PostgreSQL store", func(ctx context.Context) (state.Store, error) {
		return pgstore.Open(ctx, url, pgstore.Options{})
	})
}

func checkMadeOnCleanup(tb testing.TB, what string, open func(context.Context) (state.Store, error)) {
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), CheckTimeout)
		defer cancel()
		st, err := open(ctx)
		if err != nil {
			tb.Errorf("open %s to check it: %v", what, err)
			return
		}
		check(tb, st)
		_ = st.Close()
	})
}

func check(tb testing.TB, st state.Store) {
	ctx, cancel := context.WithTimeout(context.Background(), CheckTimeout)
	defer cancel()
	where := st.Info().Backend + " store " + st.Info().Location
	rep, err := st.Check(ctx)
	if err != nil {
		tb.Errorf("check the %s at the end of the test: %v", where, err)
		return
	}
	if !rep.OK() {
		lines := make([]string, 0, len(rep.Problems))
		for _, p := range rep.Problems {
			lines = append(lines, "\t"+p.Where+": "+p.Message)
		}
		tb.Errorf("the %s is inconsistent at the end of the test (%d problems):\n%s", where, len(rep.Problems), strings.Join(lines, "\n"))
	}
}

// Counting is a store that counts its write transactions, so a test can
// say "nothing was written".
type Counting struct {
	state.Store
	// Updates is the number of Update calls, failed ones included.
	Updates atomic.Int64
}

// Update counts, then runs the store's Update.
func (c *Counting) Update(ctx context.Context, fn func(state.Tx) error) error {
	c.Updates.Add(1)
	return c.Store.Update(ctx, fn)
}

// Read runs read in one read-only transaction of st and returns what it
// read, failing tb if it cannot (state.ViewValue for a test).
func Read[T any](tb testing.TB, st state.Store, read func(ctx context.Context, tx state.Tx) (T, error)) T {
	tb.Helper()
	ctx := context.Background()
	v, err := state.ViewValue(ctx, st, func(tx state.Tx) (T, error) { return read(ctx, tx) })
	if err != nil {
		tb.Fatalf("read the %s store: %v", st.Info().Backend, err)
	}
	return v
}

// Spore reads the record of id, failing tb if it cannot.
func Spore(tb testing.TB, st state.Store, id string) state.Spore {
	tb.Helper()
	return Read(tb, st, func(ctx context.Context, tx state.Tx) (state.Spore, error) { return tx.Spore(ctx, id) })
}

// Events reads the whole log of id, failing tb if it cannot.
func Events(tb testing.TB, st state.Store, id string) []state.Event {
	tb.Helper()
	return Read(tb, st, func(ctx context.Context, tx state.Tx) ([]state.Event, error) { return tx.Events(ctx, id, 0, 0) })
}

// Create writes the spores as they are, in one transaction.
func Create(tb testing.TB, st state.Store, spores ...state.Spore) {
	tb.Helper()
	ctx := context.Background()
	err := st.Update(ctx, func(tx state.Tx) error {
		for _, sp := range spores {
			if err := tx.CreateSpore(ctx, sp); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatalf("create %d spores: %v", len(spores), err)
	}
}
