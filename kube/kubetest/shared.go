package kubetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// One server per test package: startup costs about a second and 300 MB,
// and every test works in a namespace of its own, so sharing is safe.
var shared struct {
	once sync.Once
	srv  *Server
	err  error
}

// Main runs a test package's tests and stops the shared server after
// them. Use it from TestMain: os.Exit(kubetest.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if shared.srv != nil {
		shared.srv.Stop()
	}
	return code
}

// Shared returns the package's server, starting it on first use. Without
// binaries it skips tb, or fails it when CI is set. The package must use
// Main in its TestMain, or the server outlives the tests (until the test
// binary exits, which kills it).
func Shared(tb testing.TB) *Server {
	tb.Helper()
	shared.once.Do(func() {
		if _, err := Binary("kube-apiserver"); err != nil {
			shared.err = err
			return
		}
		// The context bounds only the wait for readiness; the processes
		// outlive the test that happened to start them.
		ctx, cancel := context.WithTimeout(tb.Context(), 2*time.Minute)
		defer cancel()
		shared.srv, shared.err = Start(ctx)
	})
	if shared.err != nil {
		if _, missing := Binary("kube-apiserver"); missing != nil && !inCI() {
			tb.Skipf("no kube-apiserver: %v", shared.err)
		}
		tb.Fatalf("kube-apiserver: %v", shared.err)
	}
	return shared.srv
}

// RequireBinary returns the named tool's path, skipping or failing as
// Shared does.
func RequireBinary(tb testing.TB, name string) string {
	tb.Helper()
	p, err := Binary(name)
	if err != nil {
		if inCI() {
			tb.Fatalf("CI is set but %v", err)
		}
		tb.Skip(err)
	}
	return p
}

// mustf is for setup steps inside helpers.
func mustf(tb testing.TB, err error, format string, args ...any) {
	tb.Helper()
	if err != nil {
		tb.Fatalf("%s: %v", fmt.Sprintf(format, args...), err)
	}
}

// New starts a server of the test's own, stopped in tb's cleanup; for the
// rare test that must not share (one that stops the server, say).
func New(tb testing.TB) *Server {
	tb.Helper()
	RequireBinary(tb, "etcd")
	RequireBinary(tb, "kube-apiserver")
	ctx, cancel := context.WithTimeout(tb.Context(), 2*time.Minute)
	defer cancel()
	s, err := Start(ctx)
	mustf(tb, err, "start kube-apiserver")
	tb.Cleanup(s.Stop)
	return s
}
