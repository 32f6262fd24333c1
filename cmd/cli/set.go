package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/internal/quote"
	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
)

// newCmdSet is kubectl's `set`: change one field of an existing spore's
// wish.
func newCmdSet(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "set",
		Short: "Change one setting of existing spores",
	}
	cmd.AddCommand(newCmdSetSleepAfter(f, nil), newCmdSetBudget(f, nil))
	return cmd
}

type setSleepAfterOptions struct {
	f     *Factory
	IDs   []string
	After time.Duration
}

// newCmdSetSleepAfter builds the command; runF, when not nil, is called
// instead of running it (tests of what the arguments parse into).
func newCmdSetSleepAfter(f *Factory, runF func(context.Context, *setSleepAfterOptions) error) *cobra.Command {
	o := &setSleepAfterOptions{f: f}
	return &cobra.Command{
		Use:   "sleep-after ID... DURATION",
		Short: "Put spores to sleep after DURATION idle (0: their colony's setting)",
		Long: fmt.Sprintf(`Record that each spore is put to sleep once it has been idle for DURATION: no
turn running, nothing queued (see "Idle sleep" in the docs). A reconcile then records the
sleep, by idle, and frees its pod. DURATION is between %s and %s; 0 unsets it,
so the colony's sleep-after applies (colony set). The [arch] mycologist is
always on and is refused.`, state.MinSleepAfter, time.Duration(state.MaxSleepAfter)),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usageErrorf("%s needs at least one spore id and a duration", cmd.CommandPath())
			}
			if err := sporeIDs(-1)(cmd, args[:len(args)-1]); err != nil {
				return err
			}
			d, err := parseSleepAfter("sleep-after", args[len(args)-1])
			if err != nil {
				return err
			}
			o.IDs, o.After = args[:len(args)-1], d
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.run(cmd.Context())
		},
	}
}

// parseSleepAfter reads a sleep-after: a Go duration within the bounds,
// or 0; what names it in the error ("--sleep-after", "sleep-after").
func parseSleepAfter(what, s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if s == "0" {
		d, err = 0, nil
	}
	if err != nil || state.ValidateSleepAfter("sleep after", state.Duration(d)) != nil {
		return 0, usageErrorf("invalid value %s for %s: want 0 or a duration such as 30m, from %s to %s",
			quote.Value(s), what, state.MinSleepAfter, time.Duration(state.MaxSleepAfter))
	}
	return d, nil
}

func (o *setSleepAfterOptions) run(ctx context.Context) error {
	return setEach(ctx, o.f, o.IDs, func(ctx context.Context, tx state.Tx, id, from string, now time.Time) (bool, error) {
		_, wrote, err := wish.SetSleepAfter(ctx, tx, id, o.After, from, now)
		return wrote, err
	})
}

// setEach changes each spore's wish with set, as the user who runs the
// command, and prints what became of each: configured, or unchanged
// when set wrote nothing.
func setEach(ctx context.Context, f *Factory, ids []string, set func(ctx context.Context, tx state.Tx, id, from string, now time.Time) (bool, error)) error {
	st, err := f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	now := f.Now().UTC()
	from := "user:" + userName(f.Getenv)
	res := actionResults{}
	// One transaction: all the spores or, if one is refused, none.
	err = st.Update(ctx, func(tx state.Tx) error {
		res.Results = res.Results[:0]
		for _, id := range ids {
			wrote, err := set(ctx, tx, id, from, now)
			if err != nil {
				return err
			}
			action := "unchanged"
			if wrote {
				action = "configured"
			}
			res.Results = append(res.Results, actionResult{Kind: "spore", ID: id, Action: action})
		}
		return nil
	})
	if err != nil {
		return err
	}
	return f.Print(res)
}
