package pgtest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"
)

var (
	shared   *Server
	startErr error
)

// Main starts one server for a test package, runs its tests and stops the
// server. Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
//
// Without a server, tests that need one skip (or, with $CI set, the whole
// package fails here, loudly).
func Main(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	srv, err := Start(ctx)
	cancel()
	if err != nil {
		if os.Getenv("CI") != "" {
			fmt.Fprintf(os.Stderr, "FAIL: pgtest: cannot start PostgreSQL and CI is set: %v\n", err)
			return 1
		}
		startErr = err
		return m.Run()
	}
	shared = srv
	code := m.Run()
	if err := srv.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: stop server: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Shared returns the package's server, skipping the test when none could
// be started (failing when $CI is set).
func Shared(t testing.TB) *Server {
	t.Helper()
	if shared == nil {
		err := startErr
		if err == nil {
			err = fmt.Errorf("pgtest.Main did not run (add a TestMain)")
		}
		if os.Getenv("CI") != "" {
			t.Fatalf("PostgreSQL is required in CI: %v", err)
		}
		t.Skipf("no PostgreSQL server: %v", err)
	}
	return shared
}

// NewDatabase makes a fresh database for this test, dropped when it ends,
// and returns its URL.
func NewDatabase(t testing.TB) string {
	t.Helper()
	srv := Shared(t)
	ctx := context.Background()
	name, url, err := srv.CreateDatabase(ctx)
	if err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.DropDatabase(context.Background(), name); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	return url
}

var lazy struct {
	once sync.Once
	srv  *Server
	err  error
}

// Lazy returns the test binary's server, starting it the first time a
// test or benchmark asks, so a run that needs none starts none (unlike
// Main, which starts it for every run of the package). Without one it
// skips, or fails when $CI is set, as Shared does. TestMain stops it with
// StopLazy.
func Lazy(tb testing.TB) *Server {
	tb.Helper()
	srv, err := LazyServer()
	if err != nil {
		if os.Getenv("CI") != "" {
			tb.Fatalf("PostgreSQL is required in CI: %v", err)
		}
		tb.Skipf("no PostgreSQL server: %v", err)
	}
	return srv
}

// LazyServer is Lazy for a caller that goes on without a server (a
// benchmark that leaves its PostgreSQL variant out): the error says why
// there is none.
func LazyServer() (*Server, error) {
	lazy.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		lazy.srv, lazy.err = Start(ctx)
	})
	return lazy.srv, lazy.err
}

// StopLazy stops the server Lazy started, if it did.
func StopLazy() {
	if lazy.srv != nil {
		if err := lazy.srv.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: stop server: %v\n", err)
		}
	}
}
