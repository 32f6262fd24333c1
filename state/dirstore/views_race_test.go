package dirstore

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/storetest"
)

// TestConcurrentViews: Views running at once over one published model
// (a long-lived process such as serve) share its lazily built id order
// without a data race; run with -race.
func TestConcurrentViews(t *testing.T) {
	ctx := context.Background()
	s := newTestStore(t, Options{})
	for i := 0; i < 20; i++ {
		require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, storetest.Spore(fmt.Sprintf("s%d", i))) }))
		var wg sync.WaitGroup
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = s.View(ctx, func(tx state.Tx) error { _, err := tx.Spores(ctx); return err })
			}()
		}
		wg.Wait()
	}
}
