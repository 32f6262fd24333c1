package pgstore_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/storetest"
)

// TestCheckFindsImpossibleValues: a column whose value no write of
// sporectl makes, and that reads let through, is a problem of check
// naming the table, the spore and the column (docs/postgres.md §6).
func TestCheckFindsImpossibleValues(t *testing.T) {
	s, url := newStoreURL(t)
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		for _, id := range []string{"one", "two"} {
			if err := tx.CreateSpore(ctx, storetest.Spore(id)); err != nil {
				return err
			}
		}
		return nil
	}))
	rep, err := s.Check(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "clean before damage: %v", rep.Problems)

	adminExec(t, url, `UPDATE sporectl.spores SET restarts = -5, spec_memory = '-3Gi', spec_cpu = 'lots', spec_storage = '0',
		model_calls = '[["msg_1",1796634000,5,0,0,0,0],["msg_2",1796634000,1,0,0,0,0],["msg_1",1796634000,9,0,0,0,0]]' WHERE id = 'one'`)
	rep, err = s.Check(ctx)
	require.NoError(t, err)
	require.Equal(t, []state.Problem{
		{Where: "sporectl.spores id=one column model_calls", Message: `impossible value: call "msg_1" is counted twice`},
		{Where: "sporectl.spores id=one column restarts", Message: "impossible value -5: a count of restarts is never negative"},
		{Where: "sporectl.spores id=one column spec_cpu", Message: `impossible value "lots": want a Kubernetes quantity such as 2, 500m, 3Gi`},
		{Where: "sporectl.spores id=one column spec_memory", Message: `impossible value "-3Gi": must be more than zero`},
		{Where: "sporectl.spores id=one column spec_storage", Message: `impossible value "0": must be more than zero`},
	}, rep.Problems)
	require.Equal(t, 2, rep.Spores)
}
