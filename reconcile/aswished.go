package reconcile

import (
	"context"
	"errors"

	"github.com/sporectl/sporectl/state"
)

// wishAsRead records a pass's own change of wish (an idle or budget
// sleep, a budget wake) for each plan of todo, inside tx (the pass's one
// transaction before act, decided.go). Each spore is re-read first: one
// deleted since the snapshot, or whose generation moved (a person acted,
// another pass wrote it), is left alone. write makes the change and says
// whether it wrote. The result is the record each write left, by plan,
// and the plans written, in todo's order.
func wishAsRead(ctx context.Context, tx state.Tx, todo []*SporePlan,
	write func(tx state.Tx, p *SporePlan) (state.Spore, bool, error),
) (map[*SporePlan]state.Spore, []*SporePlan, error) {
	done := map[*SporePlan]state.Spore{}
	var written []*SporePlan
	for _, p := range todo {
		cur, err := tx.Spore(ctx, p.Spore.ID)
		if errors.Is(err, state.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if cur.Generation != p.Spore.Generation {
			continue
		}
		sp, wrote, err := write(tx, p)
		if err != nil {
			return nil, nil, err
		}
		if wrote {
			done[p] = sp
			written = append(written, p)
		}
	}
	return done, written, nil
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
