package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
)

type colonyDeleteOptions struct {
	f    *Factory
	Name string
}

// newCmdColonyDelete builds the command; runF, when not nil, is called
// instead of running it (tests of what the arguments parse into).
func newCmdColonyDelete(f *Factory, runF func(context.Context, *colonyDeleteOptions) error) *cobra.Command {
	o := &colonyDeleteOptions{f: f}
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Remove a colony's stored settings (refused while spores are in it)",
		Long: `Remove the settings colony set (or apply) stored for colony NAME: its idle
sleep, budget, ingest quota, egress and pod options. Refused (exit 5) while
any spore is in the colony: its spores would silently lose their colony's
budget, sleep-after and egress; delete them, or apply them into another
colony, first. A colony with neither settings nor spores is exit 4.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("%s takes one colony name, got %d", cmd.CommandPath(), len(args))
			}
			return state.ValidateName("colony", args[0])
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name = args[0]
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.run(cmd.Context())
		},
	}
}

// colonyInUseError refuses to delete the settings of a colony that has
// spores; it is a conflict (exit 5).
type colonyInUseError struct {
	name   string
	spores int
}

func (e *colonyInUseError) Error() string {
	return fmt.Sprintf("colony delete %s: %d spore(s) are in it: delete them, or apply them into another colony, first (nothing was changed)", e.name, e.spores)
}

func (e *colonyInUseError) Is(target error) bool { return target == state.ErrExists }

// colonyNotFoundError: nothing is stored of the colony (exit 4).
type colonyNotFoundError struct{ name string }

func (e *colonyNotFoundError) Error() string {
	return fmt.Sprintf("colony delete %s: no such colony: it has no settings and no spores", e.name)
}

func (e *colonyNotFoundError) Is(target error) bool { return target == state.ErrNotFound }

func (o *colonyDeleteOptions) run(ctx context.Context) error {
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	err = st.Update(ctx, func(tx state.Tx) error {
		s, err := tx.Settings(ctx)
		if err != nil {
			return err
		}
		n, damaged, err := colonyMembers(ctx, tx, o.Name)
		switch {
		case err != nil:
			return err
		case n > 0:
			return &colonyInUseError{name: o.Name, spores: n}
		case damaged != nil:
			// A record that does not read may be the colony's.
			return fmt.Errorf("colony delete %s: cannot tell whether spores are in it (repair them first): %w", o.Name, damaged)
		}
		if s.Colony(o.Name).IsZero() {
			return &colonyNotFoundError{name: o.Name}
		}
		_, err = wish.SetColony(ctx, tx, o.Name, state.ColonySettings{})
		return err
	})
	if err != nil {
		return err
	}
	return o.f.Print(actionResults{Results: []actionResult{{Kind: "colony", ID: o.Name, Action: "deleted"}}})
}
