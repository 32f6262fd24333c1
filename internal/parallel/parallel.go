// Package parallel spreads CPU-bound work over the machine's cores.
package parallel

import (
	"runtime"
	"sync"
)

// For calls fn for 0…n-1 on up to every core (GOMAXPROCS), a worker for
// each per calls (at least one), and returns when all are done. Calls
// run in no particular order; fn must be safe to call concurrently for
// different i. Work of a few calls stays on the caller's goroutine's
// worker alone, where starting goroutines would cost more than it saves.
func For(n, per int, fn func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), 1+n/max(per, 1))
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < n; i += workers {
				fn(i)
			}
		})
	}
	wg.Wait()
}
