package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

// readMycologists finds, in one read of every record, the mycologists
// that incidents summon (policy.Above says which is a spore's); a damaged
// record is no mycologist to summon.
func readMycologists(ctx context.Context, tx state.Tx) (policy.Mycologists, error) {
	all, err := tx.Spores(ctx)
	if _, err = state.Damaged(err); err != nil {
		return policy.Mycologists{}, fmt.Errorf("find the mycologists to summon: %w", err)
	}
	return policy.FindMycologists(all), nil
}

// summonses groups summonses by the mycologist summoned, in the order
// each was first summoned, so each is read and written once.
type summonses struct {
	by    map[string][]Summons
	order []string
}

func (s *summonses) add(target string, sm Summons) {
	if target == "" {
		return // no mycologist to summon
	}
	if s.by == nil {
		s.by = map[string][]Summons{}
	}
	if _, ok := s.by[target]; !ok {
		s.order = append(s.order, target)
	}
	s.by[target] = append(s.by[target], sm)
}

// send raises them inside tx (summonOn: each once, within its senders'
// limits).
func (s *summonses) send(ctx context.Context, tx state.Tx, now time.Time) error {
	for _, id := range s.order {
		sp, err := tx.Spore(ctx, id)
		if err != nil {
			return fmt.Errorf("read %s to summon it: %w", id, err)
		}
		if _, err := summonOn(ctx, tx, sp, s.by[id], now); err != nil {
			return err
		}
	}
	return nil
}
