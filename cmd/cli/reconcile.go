package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/internal/quote"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/metrics"
	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
)

// progressFleet is the fleet size from which reconcile reports its steps
// on a terminal.
const progressFleet = 100

type reconcileOptions struct {
	f      *Factory
	IDs    []string
	DryRun bool
	Views  string
	// MetricsFile is where the run's Prometheus textfile goes ("": none).
	MetricsFile string
	// Every, when more than 0, runs a pass at this interval until a
	// signal (reconcile_loop.go); GiveUpAfter ends that loop when the
	// store stays unreachable this long (0: never).
	Every       time.Duration
	GiveUpAfter time.Duration
	// everySet and giveUpSet: the flags were given (a 0 given is refused).
	everySet, giveUpSet bool
}

// newCmdReconcile builds the command; runF, when not nil, is called instead of
// the run function (tests check flag parsing with it).
func newCmdReconcile(f *Factory, runF func(context.Context, *reconcileOptions) error) *cobra.Command {
	o := &reconcileOptions{f: f}
	cmd := &cobra.Command{
		Use:   "reconcile [ID...]",
		Short: "Observe everything, ingest, deliver the outbox, heal, and re-project the views",
		Long: `Run the whole pass (see "Architecture" in the docs): observe every spore (or the named
ones), ingest the lines their bridges wrote, deliver queued prompts to bridges
that are up, start spores that should run and do not (backing off
exponentially; repeated crashes open the circuit breaker), stop what runs while
it should not, commit all of it in one transaction, and rewrite the views
whose bytes changed. A second run with nothing changed writes nothing.

--dry-run prints the plan and writes nothing (it does not ingest either).

--metrics-file PATH writes the run's metrics for node_exporter's textfile
collector (see "Metrics" in the docs): the fleet's families and the run's own (its
duration, what it delivered, the breakers it opened), replacing PATH
atomically. PATH's directory must exist; name it *.prom for node_exporter. A
run that fails writes no file.

The table is the fleet after the pass acted: a spore it started shows
Starting, one it put to sleep Paused. Exits 0 when nothing needs a person, 3
when the pass ran but some spore does (its breaker open, Blocked, its stored
data damaged, a start that failed, Dead past its backoff, running against its
wish), an orphan was found or the runtime could not be observed; the line on
stderr names them. A spore the pass put to sleep, woke or restarted is no
reason for 3. The store's or runtime's code when the pass itself failed
(see "Exit codes" in the docs).

--every DURATION runs a pass, then another after DURATION (stretched by up to
10% at random), until SIGINT or SIGTERM, which end it after the pass in flight
with exit 0. Each pass opens the store, reads and writes as a cron run would,
and holds nothing for the next: killing the loop loses nothing. Each pass writes
one line on stderr; the table is printed again only when it changed. A failed
pass is logged and the loop goes on; a pass that needs attention (3) is no
failure. A store unreachable (exit 6) for --give-up-after ends the loop with 6.
Several loops, and the CronJob, may run over one store at once
(see "The loop" in the docs' CLI page).`,
		Args: optionalSporeIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.IDs = args
			o.everySet, o.giveUpSet = cmd.Flags().Changed("every"), cmd.Flags().Changed("give-up-after")
			if err := o.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.run(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&o.MetricsFile, "metrics-file", "", "write the run's Prometheus metrics to this file, atomically (node_exporter's textfile format)")
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "print what would be done; change nothing")
	cmd.Flags().StringVar(&o.Views, "views", "", "directory for the views (default: views/ in a directory store; none for PostgreSQL unless given)")
	cmd.Flags().DurationVar(&o.Every, "every", 0, "run a pass at this interval (plus up to 10% jitter) until SIGINT or SIGTERM, e.g. 30s")
	cmd.Flags().DurationVar(&o.GiveUpAfter, "give-up-after", defaultGiveUpAfter, "with --every: end the loop (exit 6) when the store stays unreachable this long (0: never)")
	return cmd
}

// validate refuses a --metrics-file that the run could not write, before
// the pass runs.
func (o *reconcileOptions) validate() error {
	if err := o.validateLoop(); err != nil {
		return err
	}
	if o.MetricsFile == "" {
		return nil
	}
	if o.DryRun {
		return usageErrorf("--metrics-file and --dry-run do not go together: a dry run writes nothing")
	}
	dir := filepath.Dir(o.MetricsFile)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return usageErrorf("invalid value %s for --metrics-file: its directory %s does not exist", quote.Value(o.MetricsFile), dir)
	}
	if fi, err := os.Stat(o.MetricsFile); err == nil && fi.IsDir() {
		return usageErrorf("invalid value %s for --metrics-file: it is a directory; name a file in it (e.g. sporectl.prom)", quote.Value(o.MetricsFile))
	}
	return nil
}

func (o *reconcileOptions) run(ctx context.Context) error {
	if o.Every > 0 {
		return o.loop(ctx)
	}
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	rep, err := o.pass(ctx, st)
	if err != nil {
		return err
	}
	o.printActions(rep)
	if err := o.f.Print(rep); err != nil {
		return err
	}
	return rep.verdict("reconcile")
}

// pass runs one pass over st and writes its metrics file: the report
// of the fleet after the pass acted. An error is the pass's own (the
// store, the views), never a spore's health.
func (o *reconcileOptions) pass(ctx context.Context, st state.Store) (*reconcileReport, error) {
	ps := o.f.Pass(st)
	if isTerminal(o.f.IO.ErrOut) && o.Every == 0 {
		start := time.Now()
		ps.Progress = func(step string, n int, detail string) {
			if n >= progressFleet {
				fmt.Fprintf(o.f.IO.ErrOut, "reconcile: %-7s %d spores  %6.2fs  %s\n", step, n, time.Since(start).Seconds(), detail)
			}
		}
	}
	views := o.Views
	if views == "" && st.Info().Backend == "dir" {
		views = filepath.Join(st.Info().Location, "views")
	}
	if views != "" {
		ps.Project = viewsProjector(views, o.f.Now)
	}
	began := time.Now()
	out, err := ps.Run(ctx, reconcile.Options{IDs: o.IDs, Heal: true, Deliver: true, DryRun: o.DryRun, Project: views != ""})
	took := time.Since(began)
	if err != nil {
		return nil, err
	}
	if o.MetricsFile != "" {
		// Whatever the fleet's health: a cron run's exit 3 (some spore
		// needs attention) is what the file is read for.
		if err := metrics.WriteFile(o.MetricsFile, metrics.Textfile(out, took, o.f.Now())); err != nil {
			return nil, err
		}
	}
	rep := newReconcileReport(out, o.f.Now(), o.DryRun)
	rep.errOut = o.f.IO.ErrOut
	return rep, nil
}

// printActions writes what the pass did, a line each, on stderr.
func (o *reconcileOptions) printActions(rep *reconcileReport) {
	for _, a := range rep.Actions {
		fmt.Fprintf(o.f.IO.ErrOut, "%s %s: %s\n", a.Spore, a.Action, a.Detail)
	}
}

// passAction is one thing a pass did (or, in a dry run, would do).
type passAction struct {
	Spore  string `json:"spore"`
	Action string `json:"action"` // start, restart, stop, sleep, deliver, open-breaker, wait
	Detail string `json:"detail"`
	Error  string `json:"error,omitempty"`
}

func actionsOf(plans []*reconcile.SporePlan, dry bool) []passAction {
	var out []passAction
	add := func(p *reconcile.SporePlan, action, detail string, err error) {
		a := passAction{Spore: p.Spore.ID, Action: action, Detail: detail}
		if err != nil {
			a.Error = err.Error()
			a.Detail += " — failed: " + err.Error()
		}
		out = append(out, a)
	}
	for _, p := range plans {
		switch {
		case p.OpenBreaker:
			add(p, "open-breaker", fmt.Sprintf("%d crashes inside the window; run 'sporectl reset %s'", len(p.Failures), p.Spore.ID), nil)
		case p.Start && p.Crash:
			// Restarted now: nothing is held back, so no "next respawn"
			// time (that is the wait case's, below, and the event's).
			add(p, "restart", "after "+p.Verdict.Text, p.StartErr)
		case p.WakeBudget:
			// Recorded awake by budget, then started (docs/budgets.md).
			add(p, "wake", "within budget again, for what is queued", p.StartErr)
		case p.Start:
			add(p, "start", "desired Running, nothing running", p.StartErr)
		case p.SleepBudget:
			add(p, "sleep", "over budget ("+p.OverText+")", p.StopErr)
		case p.SleepIdle:
			// Recorded asleep by idle, then stopped (docs/sleep.md).
			add(p, "sleep", "idle for "+p.Idle.Truncate(time.Second).String(), p.StopErr)
		case p.Stop:
			add(p, "stop", p.Verdict.Text, p.StopErr)
		case !p.Due.IsZero():
			add(p, "wait", "backing off; next respawn at "+p.Due.UTC().Format("15:04:05Z"), nil)
		}
		if dry {
			if len(p.Deliver) > 0 {
				add(p, "deliver", strconv.Itoa(len(p.Deliver))+" queued prompt(s)", nil)
			}
			continue
		}
		for _, d := range p.Delivered {
			detail := "prompt " + d.Entry.ID
			if d.Duplicate {
				detail += " (the bridge had it already)"
			}
			add(p, "deliver", detail, d.Err)
		}
	}
	return out
}

type reconcileReport struct {
	// Result is the fleet after the pass acted (reconcile.Outcome's
	// AfterAct), not as it was observed.
	reconcile.Result
	now     time.Time
	DryRun  bool         `json:"dry_run,omitempty"`
	Actions []passAction `json:"actions"`
	// attention are the spores that need a person, observeErr the
	// runtime's failure (reconcile_verdict.go).
	attention  []reconcile.SporeHealth
	observeErr error
	missing    error
	errOut     io.Writer
}

func (r reconcileReport) Table(wide bool) ([]string, [][]string) {
	return statusList{r.Result, r.now}.Table(wide)
}
func (r reconcileReport) Names() []string { return statusList{r.Result, r.now}.Names() }

// resetOptions closes a spore's circuit breaker.
type resetOptions struct {
	f   *Factory
	IDs []string
}

// newCmdReset builds the command; runF, when not nil, is called instead of
// the run function (tests check flag parsing with it).
func newCmdReset(f *Factory, runF func(context.Context, *resetOptions) error) *cobra.Command {
	o := &resetOptions{f: f}
	return &cobra.Command{
		Use:   "reset ID...",
		Short: "Close a spore's circuit breaker and forget its crashes",
		Long: `Close the circuit breaker of spores that crashed too often (effective Error),
forget their recent crashes and backoff, so the next wake or reconcile starts
them at once. For a spore whose bridge's log was lost (reason BridgeLogLost:
its home was wiped or replaced), reset also accepts the new log: ingest starts
again from the bridge's line 1, after the lines the store already holds.`,
		Args: sporeIDs(-1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.IDs = args
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.run(cmd.Context())
		},
	}
}

func (o *resetOptions) run(ctx context.Context) error {
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	now := o.f.Now().UTC()
	err = st.Update(ctx, func(tx state.Tx) error {
		for _, id := range o.IDs {
			if err := wish.Reset(ctx, tx, id, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	res := actionResults{}
	for _, id := range o.IDs {
		res.Results = append(res.Results, actionResult{Kind: "spore", ID: id, Action: "reset"})
	}
	return o.f.Print(res)
}
