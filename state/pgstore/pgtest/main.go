package pgtest

import (
	"context"
	"fmt"
	"os"
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
