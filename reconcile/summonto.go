package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/sporectl/sporectl/state"
)

// mycologists says whom a spore's incident summons (a budget's sleep, a
// dead letter): its colony mycologist, or the [arch] when its colony has
// none or the spore is that mycologist; "" when there is neither.
type mycologists struct {
	arch   string
	colony map[string]string
}

// readMycologists finds them in one read of every record; a damaged
// record is no mycologist to summon.
func readMycologists(ctx context.Context, tx state.Tx) (mycologists, error) {
	all, err := tx.Spores(ctx)
	if _, err = state.Damaged(err); err != nil {
		return mycologists{}, fmt.Errorf("find the mycologists to summon: %w", err)
	}
	m := mycologists{colony: map[string]string{}}
	for _, sp := range all {
		switch sp.Rank {
		case state.RankArch:
			m.arch = sp.ID
		case state.RankColony:
			m.colony[sp.Colony] = sp.ID
		}
	}
	return m, nil
}

// of is the mycologist that sp's incident summons; colonyWide: the
// incident is its colony's (a colony's budget), which only the [arch]
// hears of.
func (m mycologists) of(sp state.Spore, colonyWide bool) string {
	target := m.colony[sp.Colony]
	if colonyWide || target == "" || target == sp.ID {
		return m.arch
	}
	return target
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
