package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/internal/quote"
	"github.com/sporectl/sporectl/reconcile"
)

type outboxDropOptions struct {
	f     *Factory
	ID    string
	Entry string
	From  string
}

// newCmdOutboxDrop builds the command; runF, when not nil, is called
// instead of running it (tests of what the arguments parse into).
func newCmdOutboxDrop(f *Factory, runF func(context.Context, *outboxDropOptions) error) *cobra.Command {
	o := &outboxDropOptions{f: f}
	cmd := &cobra.Command{
		Use:   "drop ID MSG",
		Short: "Remove one entry, queued or a dead letter, from a spore's outbox",
		Long: `Remove message MSG (an id 'sporectl outbox ID' lists) from spore ID's outbox,
whether it is queued or a dead letter, and record that on the spore's event log
("dropped", with who dropped it). A dropped entry is never delivered (unless a
pass was posting it at that very moment: then the bridge has it). Exit 4 if
the spore or the entry is not there.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageErrorf("%s takes a spore id and a message id, got %d argument(s)", cmd.CommandPath(), len(args))
			}
			if err := sporeIDs(1)(cmd, args[:1]); err != nil {
				return err
			}
			if args[1] == "" || len(args[1]) > 128 {
				return usageErrorf("invalid message id %s: must be 1 to 128 characters", quote.Value(args[1]))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ID, o.Entry = args[0], args[1]
			o.From = "user:" + userName(o.f.Getenv)
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.run(cmd.Context())
		},
	}
	return cmd
}

func (o *outboxDropOptions) run(ctx context.Context) error {
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := reconcile.Drop(ctx, st, o.ID, o.Entry, o.From, o.f.Now()); err != nil {
		return err
	}
	return o.f.Print(actionResults{Results: []actionResult{{Kind: "message", ID: o.Entry, Action: "dropped"}}})
}
