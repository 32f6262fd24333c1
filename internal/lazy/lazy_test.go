package lazy

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNewBuildsOnceOnFirstUse: nothing is built before the first call;
// concurrent first calls build once and all get the one value.
func TestNewBuildsOnceOnFirstUse(t *testing.T) {
	var builds atomic.Int32
	get := New("lazytest.value", func() *int {
		builds.Add(1)
		v := 42
		return &v
	})
	require.NotContains(t, Built(), "lazytest.value")
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
	require.Contains(t, Built(), "lazytest.value")
}
