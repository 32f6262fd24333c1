// Package testutil holds small helpers that tests of several packages
// share and that know nothing of sporectl's types (those of the pass are
// reconcile/reconciletest's, those of the stores state/statetest's). It
// is for tests only: no package of the binary imports it
// (TestOnlyTestsImportTestHelpers).
package testutil

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that goroutines may write while a test reads
// it: a log sink, or the stderr of a command running in the background.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
