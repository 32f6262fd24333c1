package lazy

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

var runs atomic.Int32

// TestNewBuildsOnceOnFirstUse: nothing is built before the first call;
// concurrent first calls build once and all get the one value.
func TestNewBuildsOnceOnFirstUse(t *testing.T) {
	// Built is the process's: a name of this run's own, so that a run
	// after another (go test -count) does not find the last one's.
	name := fmt.Sprintf("lazytest.value.%d", runs.Add(1))
	var builds atomic.Int32
	get := New(name, func() *int {
		builds.Add(1)
		v := 42
		return &v
	})
	require.NotContains(t, Built(), name)
	require.Zero(t, builds.Load())

	var wg sync.WaitGroup
	got := make([]*int, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = get()
		}()
	}
	wg.Wait()
	require.Equal(t, int32(1), builds.Load())
	for _, p := range got {
		require.Same(t, got[0], p)
	}
	require.Contains(t, Built(), name)
}
