package reconcile

import (
	"context"
	"errors"

	"github.com/sporectl/sporectl/state"
)

// wishAsRead records a pass's own change of wish (an idle or budget
// sleep, a budget wake) for each plan of todo, in one read-write
// transaction. Each spore is re-read first: one deleted since the
// snapshot, or whose generation moved (a person acted, another pass
// wrote it), is left alone. write makes the change and says whether it
// wrote; then, in the same transaction, also runs on the plans written,
// in todo's order. The result is the record each write left, by plan.
func (ps *Pass) wishAsRead(ctx context.Context, todo []*SporePlan,
	write func(tx state.Tx, p *SporePlan) (state.Spore, bool, error),
	then func(tx state.Tx, written []*SporePlan) error,
) (map[*SporePlan]state.Spore, error) {
	done := map[*SporePlan]state.Spore{}
	err := ps.Store.Update(ctx, func(tx state.Tx) error {
		clear(done)
		var written []*SporePlan
		for _, p := range todo {
			cur, err := tx.Spore(ctx, p.Spore.ID)
			if errors.Is(err, state.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			if cur.Generation != p.Spore.Generation {
				continue
			}
			sp, wrote, err := write(tx, p)
			if err != nil {
				return err
			}
			if wrote {
				done[p] = sp
				written = append(written, p)
			}
		}
		if then == nil {
			return nil
		}
		return then(tx, written)
	})
	return done, err
}

// plansWhere is the plans for which keep is true, in order.
func plansWhere(plans []*SporePlan, keep func(*SporePlan) bool) []*SporePlan {
	var out []*SporePlan
	for _, p := range plans {
		if keep(p) {
			out = append(out, p)
		}
	}
	return out
}
