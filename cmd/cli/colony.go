package cli

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/internal/quote"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
)

// newCmdColony groups the colony-wide settings (docs/sleep.md).
func newCmdColony(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "colony",
		Short: "Show, change and delete colonies' settings (idle sleep, budget, pod options)",
	}
	cmd.AddCommand(newCmdColonySet(f, nil), newCmdColonyList(f, nil), newCmdColonyDelete(f, nil))
	return cmd
}

type colonySetOptions struct {
	f             *Factory
	Name          string
	SleepAfter    time.Duration
	WakeOnMessage bool
	// BudgetTokens and BudgetCost are --budget-tokens and --budget-cost
	// (micros), each changed only when given.
	BudgetTokens int64
	BudgetCost   int64
	// IngestQuotaMiB is --ingest-quota: the MiB of agent lines each spore
	// may have stored per UTC day (0: the default).
	IngestQuotaMiB int64
	// Egress is --egress: state.EgressAll or state.EgressNone, where the
	// colony's spores may connect beyond serve and DNS.
	Egress string
	// Pod sets the colony's pod options (docs/runtimes.md "Pod options"):
	// each flag given replaces its field, an empty value removes it.
	Pod podFlags
	// changed says whether a flag was given: only those are changed.
	changed func(string) bool
}

// newCmdColonySet builds the command; runF, when not nil, is called
// instead of running it (tests of what the flags parse into).
func newCmdColonySet(f *Factory, runF func(context.Context, *colonySetOptions) error) *cobra.Command {
	o := &colonySetOptions{f: f}
	var sleepAfter, cost string
	cmd := &cobra.Command{
		Use:   "set NAME [--sleep-after D] [--wake-on-message[=false]] [--budget-tokens N] [--budget-cost USD] [--ingest-quota MiB] [--egress all|none] [pod option flags]",
		Short: "Change a colony's idle-sleep settings, budget and pod options (only the flags given)",
		Long: `Change the settings of colony NAME that the flags give; the others are kept.
--sleep-after D puts its awake spores to sleep after D idle (no turn running,
nothing queued) unless a spore has its own (set sleep-after); 0 never.
--wake-on-message lets a message (tell, swarm tell, a person's prompt) wake a
spore of the colony that idle put to sleep, without --wake; one a person put
to sleep still needs --wake. The [arch] mycologist is always on. See "Idle
sleep" in the docs. --budget-tokens and --budget-cost are the daily budget of all
the colony's spores together, over the UTC day (0: no limit; see "Budgets" in the docs).
--ingest-quota MiB is how much of its agent's lines each spore of the colony
may have stored per UTC day (0: the default, 64; see "The bridge" in the docs); over it the
spore is Suspect (IngestQuota) and its bridge keeps the rest until the next day.
--egress none confines the colony's spores to serve and DNS; all (the default)
lets them reach the public internet too. kube/deploy's NetworkPolicies enforce
it (kube; a spore's pod gets it at its next start; see "Security" in the docs).
The pod option flags (--runtime-class, --node-selector, --toleration,
--env-from-secret, --label, --annotation; kube) set the options every spore
of the colony gets on its pod at its next start, over the store's default
(init) and under the spore's own (create): each flag given replaces its
field, an empty value (--label '') removes it (see "Runtimes" in the docs).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("%s takes one colony name, got %d", cmd.CommandPath(), len(args))
			}
			return state.ValidateName("colony", args[0])
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name, o.changed = args[0], cmd.Flags().Changed
			if !o.changed("sleep-after") && !o.changed("wake-on-message") && !o.changed("budget-tokens") && !o.changed("budget-cost") &&
				!o.changed("ingest-quota") && !o.changed("egress") && len(o.Pod.given(o.changed)) == 0 {
				return usageErrorf("%s: give --sleep-after, --wake-on-message, --budget-tokens, --budget-cost, --ingest-quota, --egress or a pod option flag (nothing to change)", cmd.CommandPath())
			}
			if o.changed("egress") && (o.Egress == "" || state.ValidateEgress("--egress", o.Egress) != nil) {
				return usageErrorf("--egress: invalid value %s: want %s or %s", quote.Value(o.Egress), state.EgressAll, state.EgressNone)
			}
			if err := state.ValidateIngestQuota("--ingest-quota", o.IngestQuotaMiB); err != nil {
				return usageErrorf("%v", err)
			}
			// Checked before anything is read: a bad value is a usage error.
			if _, err := o.Pod.onto(nil, o.changed, true); err != nil {
				return err
			}
			b, err := parseBudget(o.BudgetTokens, cost, "--budget-tokens", "--budget-cost")
			if err != nil {
				return err
			}
			o.BudgetCost = b.CostPerDayMicros
			if o.changed("sleep-after") {
				d, err := parseSleepAfter("--sleep-after", sleepAfter)
				if err != nil {
					return err
				}
				o.SleepAfter = d
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.run(cmd.Context())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&sleepAfter, "sleep-after", "0", "put awake spores to sleep after this long idle, e.g. 30m (0: never)")
	fl.BoolVar(&o.WakeOnMessage, "wake-on-message", false, "a message wakes a spore that idle put to sleep")
	fl.Int64Var(&o.BudgetTokens, "budget-tokens", 0, "the colony's daily budget of tokens, all its spores together (0: none)")
	fl.StringVar(&cost, "budget-cost", "0", "the colony's daily budget of cost in US dollars, e.g. 20 (0: none)")
	fl.Int64Var(&o.IngestQuotaMiB, "ingest-quota", 0, "MiB of agent lines each spore may have stored per UTC day (0: the default, 64)")
	fl.StringVar(&o.Egress, "egress", state.EgressAll, "where the colony's spores may connect beyond serve and DNS: all (the public internet) or none (kube)")
	o.Pod.register(fl)
	return cmd
}

func (o *colonySetOptions) run(ctx context.Context) error {
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	action, runtime, members := "unchanged", "", 0
	var damaged error
	err = st.Update(ctx, func(tx state.Tx) error {
		s, err := tx.Settings(ctx)
		if err != nil {
			return err
		}
		runtime = s.Runtime
		if members, damaged, err = colonyMembers(ctx, tx, o.Name); err != nil {
			return err
		}
		c := s.Colony(o.Name)
		if o.changed("sleep-after") {
			c.SleepAfter = state.Duration(o.SleepAfter)
		}
		if o.changed("wake-on-message") {
			c.WakeOnMessage = o.WakeOnMessage
		}
		if o.changed("budget-tokens") {
			c.Budget.TokensPerDay = o.BudgetTokens
		}
		if o.changed("budget-cost") {
			c.Budget.CostPerDayMicros = o.BudgetCost
		}
		if o.changed("ingest-quota") {
			c.IngestQuotaMiB = o.IngestQuotaMiB
		}
		if o.changed("egress") {
			// The default is kept as "", so "all" on a colony that never
			// set it writes nothing.
			c.Egress = o.Egress
			if c.Egress == state.EgressAll {
				c.Egress = ""
			}
		}
		if c.Pod, err = o.Pod.onto(c.Pod, o.changed, true); err != nil {
			return err
		}
		wrote, err := wish.SetColony(ctx, tx, o.Name, c)
		if wrote {
			action = "configured"
		}
		return err
	})
	if err != nil {
		return err
	}
	if err := o.f.Print(actionResults{Results: []actionResult{{Kind: "colony", ID: o.Name, Action: action}}}); err != nil {
		return err
	}
	if members == 0 && damaged == nil {
		// Kept all the same: settings may come before the colony's spores
		// (apply, create --colony); a misspelt name is what this catches.
		fmt.Fprintf(o.f.IO.ErrOut, "warning: no spore is in colony %s: its settings are kept for the spores created in it (sporectl colony delete %s removes them)\n", o.Name, o.Name)
	}
	if flags := o.Pod.given(o.changed); len(flags) > 0 && runtime != "kube" {
		fmt.Fprintln(o.f.IO.ErrOut, podWarning(flags, "the store keeps them as the colony's"))
	}
	if o.changed("egress") && o.Egress == state.EgressNone && runtime != "kube" {
		// Only kube's NetworkPolicies enforce it; the local runtime's
		// spores share the machine's network.
		fmt.Fprintln(o.f.IO.ErrOut, "warning: the local runtime does not confine a spore's network: --egress none is kept as the colony's, and kube/deploy's NetworkPolicies enforce it once the store runs on Kubernetes (sporectl init --runtime kube)")
	}
	return nil
}

type colonyListOptions struct{ f *Factory }

func newCmdColonyList(f *Factory, runF func(context.Context, *colonyListOptions) error) *cobra.Command {
	o := &colonyListOptions{f: f}
	return &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "The colonies (with spores or settings): idle sleep, budget and spend today (-o wide: pod options)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.run(cmd.Context())
		},
	}
}

// colonyRow is one colony as `colony list` prints it.
type colonyRow struct {
	Name          string         `json:"name"`
	Spores        int            `json:"spores"`
	SleepAfter    state.Duration `json:"sleep_after"`
	WakeOnMessage bool           `json:"wake_on_message"`
	// Budget is the colony's daily budget (zero: none) and SpendToday
	// what its spores spent together over the UTC day so far, as the
	// store's activity counts it (docs/budgets.md).
	Budget     state.Budget `json:"budget"`
	SpendToday state.Spend  `json:"spend_today"`
	// Pod is the colony's pod options (docs/runtimes.md "Pod options").
	Pod *state.PodOptions `json:"pod,omitempty"`
}

type colonyList struct {
	Colonies []colonyRow `json:"colonies"`
}

func (l colonyList) Table(wide bool) ([]string, [][]string) {
	rows := make([][]string, len(l.Colonies))
	for i, c := range l.Colonies {
		after := "never"
		if c.SleepAfter != 0 {
			after = c.SleepAfter.String()
		}
		rows[i] = []string{c.Name, strconv.Itoa(c.Spores), after, strconv.FormatBool(c.WakeOnMessage),
			c.Budget.Text(), spendCell(c.SpendToday, c.Budget)}
		if wide {
			rows[i] = append(rows[i], c.Pod.Summary())
		}
	}
	head := []string{"COLONY", "SPORES", "SLEEP-AFTER", "WAKE-ON-MESSAGE", "BUDGET", "SPENT-TODAY"}
	if wide {
		head = append(head, "POD-OPTIONS")
	}
	return head, rows
}

// spendCell is a day's spend in a table, "1200 tokens, $0.42", with
// " (over)" once it reached b.
func spendCell(s state.Spend, b state.Budget) string {
	if policy.Reaches(s, b) {
		return s.Text() + " (over)"
	}
	return s.Text()
}

func (l colonyList) Names() []string {
	out := make([]string, len(l.Colonies))
	for i, c := range l.Colonies {
		out[i] = "colony/" + c.Name
	}
	return out
}

func (o *colonyListOptions) run(ctx context.Context) error {
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	var s state.Settings
	count := map[string]int{}
	var spend map[string]state.Spend
	now := o.f.Now()
	err = st.View(ctx, func(tx state.Tx) error {
		if s, err = tx.Settings(ctx); err != nil {
			return err
		}
		spores, err := tx.Spores(ctx)
		for _, sp := range spores {
			count[sp.Colony]++
		}
		spend = policy.ColonySpends(spores, s, now)
		return err
	})
	if err != nil {
		return err
	}
	if s.Colonies != nil {
		for name := range *s.Colonies {
			if _, ok := count[name]; !ok {
				count[name] = 0 // settings, no spores yet
			}
		}
	}
	var l colonyList
	for _, name := range slices.Sorted(maps.Keys(count)) {
		c := s.Colony(name)
		l.Colonies = append(l.Colonies, colonyRow{Name: name, Spores: count[name], SleepAfter: c.SleepAfter, WakeOnMessage: c.WakeOnMessage,
			Budget: c.Budget, SpendToday: spend[name], Pod: c.Pod})
	}
	return o.f.Print(l)
}

// colonyMembers counts the stored spores of colony name (one whole read
// of the records, as colony list makes). damaged is the error naming
// records that could not be read: any of them may be the colony's.
func colonyMembers(ctx context.Context, tx state.Tx, name string) (n int, damaged error, err error) {
	spores, err := tx.Spores(ctx)
	if _, derr := state.Damaged(err); derr != nil {
		return 0, nil, fmt.Errorf("read the spores of colony %s: %w", name, derr)
	}
	for _, sp := range spores {
		if sp.Colony == name {
			n++
		}
	}
	return n, err, nil
}
