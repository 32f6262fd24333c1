package eventlog

import (
	"os"
	"sync/atomic"
)

// Test seams for the two calls that fail when the disk is full. Tests of
// this package replace them; tests elsewhere use InjectFault.
var (
	writeAt = func(f *os.File, b []byte, off int64) (int, error) {
		if err := injected("write"); err != nil {
			return 0, err
		}
		return f.WriteAt(b, off)
	}
	syncFile = func(f *os.File) error {
		if err := injected("fsync"); err != nil {
			return err
		}
		return f.Sync()
	}
)

var fault atomic.Pointer[func(op string) error]

func injected(op string) error {
	if fp := fault.Load(); fp != nil {
		return (*fp)(op)
	}
	return nil
}

// InjectFault makes every later write and fsync of every log in the
// process ask fn first (op is "write" or "fsync"); a non-nil answer fails
// the call with that error. It returns the function that removes the
// fault. FOR TESTS ONLY.
func InjectFault(fn func(op string) error) (restore func()) {
	fault.Store(&fn)
	return func() { fault.Store(nil) }
}
