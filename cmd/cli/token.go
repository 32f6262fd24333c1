package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/state"
)

func newCmdToken(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Manage spores' API tokens (for serve)",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newCmdTokenRotate(f, nil))
	return cmd
}

type tokenRotateOptions struct {
	f  *Factory
	ID string
}

// newCmdTokenRotate builds the command; runF, when not nil, is called
// instead of the run function (tests check flag parsing with it).
func newCmdTokenRotate(f *Factory, runF func(context.Context, *tokenRotateOptions) error) *cobra.Command {
	o := &tokenRotateOptions{f: f}
	return &cobra.Command{
		Use:   "rotate ID",
		Short: "Replace a spore's API token: the old one stops working now, the spore gets a new one on its next start",
		Long: `Store the hash of a fresh token for the spore, in one transaction with an event
saying so. From then on serve refuses the old token (401). Nobody holds the
fresh one: the spore gets a token of its own on its next start, as on every
start (sleep and wake it to give it one now). No token is printed.`,
		Args: sporeIDs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ID = args[0]
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.run(cmd.Context())
		},
	}
}

func (o *tokenRotateOptions) run(ctx context.Context) error {
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	// The plaintext is dropped here: only its hash is ever kept.
	_, hash, err := state.NewToken()
	if err != nil {
		return err
	}
	now := o.f.Now().UTC()
	err = st.Update(ctx, func(tx state.Tx) error {
		if _, err := tx.Spore(ctx, o.ID); err != nil {
			return err
		}
		if err := tx.SetTokenHash(ctx, o.ID, hash); err != nil {
			return err
		}
		_, err := tx.Append(ctx, o.ID, []state.Event{{Kind: state.KindLifecycle, Action: "token-rotated", At: now,
			Text: "API token rotated: the old one no longer authenticates; the spore gets a new one on its next start"}})
		return err
	})
	if err != nil {
		return err
	}
	return o.f.Print(actionResults{Results: []actionResult{{Kind: "token", ID: o.ID, Action: "rotated"}}})
}
