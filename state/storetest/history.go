package storetest

import (
	"context"
	"strconv"

	"github.com/sporectl/sporectl/state"
)

// AppendHistory gives spore id n agent lines in txs transactions (the
// last one takes the remainder). Benchmarks that compare a short history
// with a long one use the same txs for both, so the fixtures differ only
// in the length of the history.
func AppendHistory(ctx context.Context, s state.Store, id string, n, txs int) error {
	batch := max(1, n/txs)
	for done := 0; done < n; done += batch {
		k := min(batch, n-done)
		err := s.Update(ctx, func(tx state.Tx) error {
			evs := make([]state.Event, k)
			for i := range evs {
				evs[i] = state.Event{Kind: state.KindAgent, BridgeSeq: uint64(done + i + 1),
					Line: []byte(`{"type":"assistant","message":{"content":[{"type":"text","text":"line ` + strconv.Itoa(done+i) + ` of a long conversation"}]}}`)}
			}
			_, err := tx.Append(ctx, id, evs)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}
