package parallel

import (
	"runtime"
	"sync/atomic"
	"testing"
)

// TestForCallsEachIndexOnce: every index once, for sizes around the
// worker split.
func TestForCallsEachIndexOnce(t *testing.T) {
	for _, n := range []int{0, 1, 7, 511, 512, 513, 4096} {
		counts := make([]atomic.Int32, n)
		For(n, 512, func(i int) { counts[i].Add(1) })
		for i := range counts {
			if c := counts[i].Load(); c != 1 {
				t.Fatalf("n=%d: index %d called %d times", n, i, c)
			}
		}
	}
}

// TestForSpreadsLargeWork: with 2 cores or more, a large n runs on at
// least two goroutines at once (each call waits for another to start).
func TestForSpreadsLargeWork(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		t.Fatalf("needs GOMAXPROCS >= 2, have %d", runtime.GOMAXPROCS(0))
	}
	var running, most atomic.Int32
	For(2048, 512, func(i int) {
		now := running.Add(1)
		for {
			m := most.Load()
			if now <= m || most.CompareAndSwap(m, now) {
				break
			}
		}
		for j := 0; j < 2000 && most.Load() < 2; j++ {
			runtime.Gosched()
		}
		running.Add(-1)
	})
	if most.Load() < 2 {
		t.Fatalf("at most %d calls ran at once", most.Load())
	}
}
