package colonyspec

import (
	"context"
	"fmt"
	"time"

	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
)

// From is the sender apply records in the events it writes beside the
// wish (a loop's).
const From = "sporectl:apply"

// Apply records every change of p in tx through reconcile/wish: the
// prunes first (a rank they free can be taken), then the changed spores
// and colonies, then the new spores, each as its wish transition (Delete,
// SetColony, SetSpec, Set, SetLoop, SetSleepAfter, Create). A refusal of the rules is returned with the file and
// line of the spore it concerns; the caller's transaction then commits
// nothing. The pruned spores' processes and homes are the caller's to end
// after the commit (as `delete` does).
func Apply(ctx context.Context, tx state.Tx, p Plan, now time.Time) error {
	for _, order := range []Action{Pruned, Configured, Created} {
		for _, c := range p.Changes {
			if c.Action != order {
				continue
			}
			if err := apply(ctx, tx, c, now); err != nil {
				if c.where == "" {
					return fmt.Errorf("%s spore %s: %w", c.Action, c.ID, err)
				}
				return fmt.Errorf("%s: %w", c.where, err)
			}
		}
	}
	return nil
}

func apply(ctx context.Context, tx state.Tx, c Change, now time.Time) error {
	if c.Settings != nil {
		_, err := wish.SetColony(ctx, tx, c.Colony, applied(*c.Settings, now))
		return err
	}
	switch c.Action {
	case Pruned:
		return wish.Delete(ctx, tx, c.ID)
	case Created:
		if _, err := wish.Create(ctx, tx, *c.New, now); err != nil {
			return err
		}
	case Configured:
		if c.Spec != nil {
			if _, _, err := wish.SetSpec(ctx, tx, c.ID, *c.Spec, now); err != nil {
				return err
			}
		}
	}
	if c.Desired != "" {
		if err := wish.Set(ctx, tx, c.ID, c.Desired, now); err != nil {
			return err
		}
	}
	if c.Loop != nil {
		if _, _, err := wish.SetLoop(ctx, tx, c.ID, *c.Loop, From, now); err != nil {
			return err
		}
	}
	if c.SleepAfter != nil {
		if _, _, err := wish.SetSleepAfter(ctx, tx, c.ID, *c.SleepAfter, From, now); err != nil {
			return err
		}
	}
	if c.Budget != nil {
		if _, _, err := wish.SetBudget(ctx, tx, c.ID, *c.Budget, From, now); err != nil {
			return err
		}
	}
	return nil
}
