// Package lazy builds a process's costly values (templates, markdown
// renderers, regular expressions, parsed tables) on first use rather than
// at package init, so a command that needs none of them (`sporectl
// version`, `--help`, `completion`) pays for none of them. It records
// which values were built, so a test can prove that such a command built
// none (Built).
//
// It must never hold a value that depends on a command's input: a value
// is built once per process, from the program alone.
package lazy

import (
	"slices"
	"sync"
)

var (
	mu    sync.Mutex
	built = map[string]bool{}
)

// New returns a function that builds the value with build on its first
// call, from whichever goroutine calls first, and returns that same value
// on every call after. name says what the value is in Built ("ui.pages");
// a panic in build is the caller's (as with sync.OnceValue, every call
// then panics the same way).
func New[T any](name string, build func() T) func() T {
	return sync.OnceValue(func() T {
		mu.Lock()
		built[name] = true
		mu.Unlock()
		return build()
	})
}

// Built names the values built so far in this process, sorted.
func Built() []string {
	mu.Lock()
	defer mu.Unlock()
	names := make([]string, 0, len(built))
	for n := range built {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
