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

type setBudgetOptions struct {
	f      *Factory
	IDs    []string
	Budget state.Budget
	// SetTokens and SetCost say which limits were named (--tokens,
	// --cost): only those change; Clear (--clear) removes both.
	SetTokens, SetCost, Clear bool
}

// newCmdSetBudget builds the command; runF, when not nil, is called
// instead of running it (tests of what the arguments parse into).
func newCmdSetBudget(f *Factory, runF func(context.Context, *setBudgetOptions) error) *cobra.Command {
	o := &setBudgetOptions{f: f}
	var cost string
	cmd := &cobra.Command{
		Use:   "budget ID... (--tokens N | --cost USD | --clear)",
		Short: "Set spores' daily budget of tokens and cost (0: none)",
		Long: `Record each spore's daily budget (see "Budgets" in the docs): the tokens (in and out) and
the cost in US dollars it may spend over a UTC day. Once it reaches either, it
gets no new prompt or message (each stays queued), and it is put to sleep when
its turn ends; the next UTC day, or a raised budget, wakes it for what is
queued. Only the limits named change: --cost 1 keeps the token limit. 0 removes
that kind of limit (--tokens 0: no token limit); --clear removes the spore's
own budget, both limits (its colony's still applies). Give at least one of
them: a bare set budget is refused (exit 2). The [arch] mycologist is always
on and is refused.`,
		Args: sporeIDs(-1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErrorf("%s needs at least one spore id", cmd.CommandPath())
			}
			o.SetTokens, o.SetCost = cmd.Flags().Changed("tokens"), cmd.Flags().Changed("cost")
			switch {
			case o.Clear && (o.SetTokens || o.SetCost):
				return usageErrorf("%s: --clear removes both limits: give it alone, or --tokens and --cost without it", cmd.CommandPath())
			case !o.Clear && !o.SetTokens && !o.SetCost:
				return usageErrorf("%s: give --tokens, --cost or --clear (nothing to change)", cmd.CommandPath())
			}
			b, err := parseBudget(o.Budget.TokensPerDay, cost, "--tokens", "--cost")
			if err != nil {
				return err
			}
			o.IDs, o.Budget = args, b
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.run(cmd.Context())
		},
	}
	cmd.Flags().Int64Var(&o.Budget.TokensPerDay, "tokens", 0, "tokens, in and out, per UTC day (0: no limit)")
	cmd.Flags().StringVar(&cost, "cost", "0", "cost in US dollars per UTC day, e.g. 2.50 (0: no limit)")
	cmd.Flags().BoolVar(&o.Clear, "clear", false, "remove the spore's own budget, both limits")
	return cmd
}

// parseBudget checks a budget's flags: tokens not negative, cost a sum
// of US dollars; tokensFlag and costFlag name them in the error.
func parseBudget(tokens int64, cost, tokensFlag, costFlag string) (state.Budget, error) {
	if tokens < 0 {
		return state.Budget{}, usageErrorf("invalid value %d for %s: want 0 (no limit) or more tokens", tokens, tokensFlag)
	}
	micros, err := state.ParseCost(costFlag, cost)
	if err != nil {
		return state.Budget{}, usageErrorf("invalid value %s for %s: want 0 (no limit) or a cost in US dollars such as 2.50", quote.Value(cost), costFlag)
	}
	return state.Budget{TokensPerDay: tokens, CostPerDayMicros: micros}, nil
}

func (o *setBudgetOptions) run(ctx context.Context) error {
	return setEach(ctx, o.f, o.IDs, func(ctx context.Context, tx state.Tx, id, from string, now time.Time) (bool, error) {
		sp, err := tx.Spore(ctx, id)
		if err != nil {
			return false, fmt.Errorf("set budget %s: %w", id, err)
		}
		_, wrote, err := wish.SetBudget(ctx, tx, id, o.onto(sp.Budget), from, now)
		return wrote, err
	})
}

// onto is the budget b becomes: the limits named replace b's, the others
// are kept; --clear leaves none.
func (o *setBudgetOptions) onto(b state.Budget) state.Budget {
	if o.Clear {
		return state.Budget{}
	}
	if o.SetTokens {
		b.TokensPerDay = o.Budget.TokensPerDay
	}
	if o.SetCost {
		b.CostPerDayMicros = o.Budget.CostPerDayMicros
	}
	return b
}
