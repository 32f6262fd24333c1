package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/internal/quote"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
)

type createOptions struct {
	f *Factory
	// IDs are created in one transaction, each with the same flags.
	IDs    []string
	Colony string
	Rank   string
	Swarm  string
	Role   string
	Wake   bool
	// Wait is --wait: with --wake, wait up to this long for each bridge
	// to answer, as wake --wait does.
	Wait time.Duration
	Spec state.Spec
	// Pod are the pod option flags; validate puts what they say in
	// Spec.Pod.
	Pod podFlags
	// SleepAfter is --sleep-after (0: the colony's).
	SleepAfter time.Duration
	sleepAfter string
	// Budget is --budget-tokens and --budget-cost (zero: none).
	Budget     state.Budget
	budgetCost string
	// changed says whether a flag was given (an empty value given on
	// purpose is refused).
	changed func(string) bool
}

// newCmdCreate builds the command; runF, when not nil, is called instead of
// running it (tests of what the flags parse into).
func newCmdCreate(f *Factory, runF func(context.Context, *createOptions) error) *cobra.Command {
	o := &createOptions{f: f}
	cmd := &cobra.Command{
		Use:   "create ID [ID...]",
		Short: "Create spores (asleep unless --wake)",
		Long: `Create spores in the store, each with the flags given, in one transaction: all of
them or, when one cannot be created (its id taken, its rank taken), none. An id
becomes its pod name: 1-57 lowercase letters, digits and '-', starting with a
letter and ending with a letter or digit.`,
		Args: sporeIDs(-1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.IDs = args
			o.changed = cmd.Flags().Changed
			if err := o.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.run(cmd.Context())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Colony, "colony", "default", "colony the spore belongs to")
	fl.StringVar(&o.Rank, "rank", "spore", "rank: spore|swarm|colony|arch")
	fl.StringVar(&o.Swarm, "swarm", "", "swarm the spore belongs to")
	fl.StringVar(&o.Role, "role", "", "role within the swarm (needs --swarm)")
	fl.BoolVar(&o.Wake, "wake", false, "wake it right away (desired Running, started now)")
	fl.DurationVar(&o.Wait, "wait", 0, "with --wake, wait up to this long for each spore's bridge to answer, as wake --wait")
	fl.StringVar(&o.Spec.Image, "image", "", "image (default: the store's)")
	fl.StringVar(&o.Spec.CPU, "cpu", "", "CPU, e.g. 2 or 500m (default: the store's)")
	fl.StringVar(&o.Spec.Memory, "memory", "", "memory, e.g. 3Gi (default: the store's)")
	fl.StringVar(&o.Spec.Storage, "storage", "", "size of the home, e.g. 5Gi (default: the store's)")
	o.Pod.register(fl)
	fl.StringVar(&o.sleepAfter, "sleep-after", "0", "put it to sleep after this long idle, e.g. 30m (0: its colony's setting)")
	fl.Int64Var(&o.Budget.TokensPerDay, "budget-tokens", 0, "its daily budget of tokens, in and out, over the UTC day (0: none)")
	fl.StringVar(&o.budgetCost, "budget-cost", "0", "its daily budget of cost in US dollars, e.g. 2.50 (0: none)")
	return cmd
}

func (o *createOptions) validate() error {
	switch {
	case o.Wait < 0:
		return usageErrorf("invalid value %s for --wait: must be 0 or more", o.Wait)
	case o.Wait > 0 && !o.Wake:
		return usageErrorf("--wait needs --wake: a spore created asleep has no bridge to wait for")
	}
	seen := make(map[string]bool, len(o.IDs))
	for _, id := range o.IDs {
		if seen[id] {
			return usageErrorf("spore id %s is given twice", quote.Value(id))
		}
		seen[id] = true
	}
	if _, err := state.ParseRank(o.Rank); err != nil {
		return usageErrorf("invalid value %s for --rank: use spore, swarm, colony or arch", quote.Value(o.Rank))
	}
	if err := state.ValidateName("--colony", o.Colony); err != nil {
		return err
	}
	if o.Swarm != "" {
		if err := state.ValidateName("--swarm", o.Swarm); err != nil {
			return err
		}
	}
	if o.Role != "" {
		if o.Swarm == "" {
			return usageErrorf("--role needs --swarm")
		}
		if err := state.ValidateName("--role", o.Role); err != nil {
			return err
		}
	}
	for flag, v := range map[string]string{"cpu": o.Spec.CPU, "memory": o.Spec.Memory, "storage": o.Spec.Storage} {
		if err := validateQuantity(flag, v, o.changed(flag)); err != nil {
			return err
		}
	}
	if err := validateImage(o.Spec.Image, o.changed("image")); err != nil {
		return err
	}
	d, err := parseSleepAfter("--sleep-after", o.sleepAfter)
	if err != nil {
		return err
	}
	if d != 0 && policy.AlwaysOnRank(state.Rank(o.Rank)) {
		return usageErrorf("--sleep-after cannot be set on the [arch] mycologist: it is always on")
	}
	o.SleepAfter = d
	if o.Budget, err = parseBudget(o.Budget.TokensPerDay, o.budgetCost, "--budget-tokens", "--budget-cost"); err != nil {
		return err
	}
	if !o.Budget.IsZero() && policy.AlwaysOnRank(state.Rank(o.Rank)) {
		return usageErrorf("--budget-tokens and --budget-cost cannot be set on the [arch] mycologist: it is always on")
	}
	pod, err := o.Pod.options(o.changed)
	if err != nil {
		return err
	}
	o.Spec.Pod = pod
	return nil
}

func (o *createOptions) run(ctx context.Context) error {
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	now := o.f.Now().UTC()
	// Created asleep (wish.Create); --wake then wakes them like `wake`
	// does, so the token and the start follow one path.
	news := make([]wish.New, len(o.IDs))
	for i, id := range o.IDs {
		news[i] = wish.New{ID: id, Colony: o.Colony, Rank: state.Rank(o.Rank), Swarm: o.Swarm, Role: o.Role, Spec: o.Spec, SleepAfter: o.SleepAfter, Budget: o.Budget}
	}
	var runtime string
	err = st.Update(ctx, func(tx state.Tx) error {
		settings, err := tx.Settings(ctx)
		if err != nil {
			return err
		}
		runtime = settings.Runtime
		if err := settings.CheckPodSecrets("--env-from-secret", o.Spec.Pod); err != nil {
			return err
		}
		_, err = wish.CreateMany(ctx, tx, news, now)
		return err
	})
	if err != nil {
		return err
	}
	if flags := o.Pod.given(o.changed); len(flags) > 0 && runtime != "kube" {
		// Kept, not refused: the record is the spore's wish, and a store
		// copied to a kube store takes its spores with it.
		fmt.Fprintln(o.f.IO.ErrOut, podWarning(flags, o.keepers()))
	}
	res := actionResults{Results: make([]actionResult, len(o.IDs))}
	for i, id := range o.IDs {
		res.Results[i] = actionResult{Kind: "spore", ID: id, Action: "created"}
	}
	if err := o.f.Print(res); err != nil {
		return err
	}
	if o.Wake {
		w := &lifecycleOptions{f: o.f, verb: "wake", desired: state.Running, action: "woken", IDs: o.IDs, Wait: o.Wait}
		return w.run(ctx)
	}
	return nil
}

// keepers names who keeps the pod options in podWarning's sentence.
func (o *createOptions) keepers() string {
	if len(o.IDs) == 1 {
		return "spore " + o.IDs[0] + " keeps them"
	}
	return fmt.Sprintf("the %d spores keep them", len(o.IDs))
}
