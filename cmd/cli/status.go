package cli

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/policy"
)

type statusOptions struct {
	f       *Factory
	IDs     []string
	Targets targetFlags
	Watch   bool
	// Interval is how often a watch observes reality (--watch-interval).
	Interval time.Duration
}

// newCmdStatus builds the command; runF, when not nil, is called instead of
// the run function (tests check flag parsing with it).
func newCmdStatus(f *Factory, runF func(context.Context, *statusOptions) error) *cobra.Command {
	o := &statusOptions{f: f}
	cmd := &cobra.Command{
		Use:   "status [ID... | -l SELECTOR | --all]",
		Short: "Show desired, observed and effective health per spore",
		Long: `Show each spore's desired state, what is observed of it right now (its pod or
process tree, its bridge, the agent's activity), and the effective health that
follows (see "Health" in the docs). Like every command it first ingests the lines its
bridges wrote since the last command, and records health transitions as
events; it never starts, stops or delivers anything.

Exits 3 when any spore shown is Dead, Diverged, Suspect, Blocked or Error,
or when the runtime holds objects marked as sporectl's whose spore is not in
the store (orphans: listed, never removed by status).

--watch (-w) prints the table, then a row again whenever it changes, as
kubectl's -w does: it wakes on the store's change notices and observes
every --watch-interval (pods and bridges do not notify the store). A spore
deleted meanwhile is printed once more, DELETED. -o json prints one
document per line, holding the spores that changed. Ctrl-C ends it
quietly with exit 0; a watch does not exit 3.

-l shows the spores a selector matches (see "Selecting spores" in the docs); a
watch selects once, when it starts.`,
		Args: optionalSporeIDs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.IDs = args
			if err := checkWatchInterval(o.Interval); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			if o.Watch {
				return endedByInterrupt(cmd.Context(), o.watch(cmd.Context()))
			}
			return o.run(cmd.Context())
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&o.Watch, "watch", "w", false, "after the table, print each row again when it changes (Ctrl-C ends)")
	fl.DurationVar(&o.Interval, "watch-interval", DefaultWatchInterval, "with --watch: how often to observe pods and bridges when the store says nothing changed")
	addTargetFlags(cmd, &o.Targets)
	return cmd
}

func optionalSporeIDs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 && !selecting(cmd) {
		return nil
	}
	return sporeIDs(-1)(cmd, args)
}

func (o *statusOptions) run(ctx context.Context) error {
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	var ok bool
	if o.IDs, ok, err = resolveTargets(ctx, o.f, st, o.IDs, o.selection()); err != nil {
		return err
	} else if !ok {
		return o.printNone()
	}
	var looked *reconcile.FleetObservation
	if len(o.IDs) == 0 && o.f.Global.Output == "json" {
		// The fleet's document, spore by spore (status_stream.go); when
		// it has something to record, the whole pass takes its look.
		var done bool
		if done, looked, err = o.stream(ctx, st); done {
			return err
		}
	}
	out, err := o.f.Pass(st).Run(ctx, reconcile.Options{IDs: o.IDs, Looked: looked})
	if err != nil {
		return err
	}
	if err := o.f.Print(statusList{out.Result, o.f.Now()}); err != nil {
		return err
	}
	return healthReport(o.f, "status", out)
}

// selection is what status resolves: --all alone is status without ids,
// the whole fleet and its orphans, as the pass reads it (not a list of
// every id, which would leave the orphans out).
func (o *statusOptions) selection() targetFlags {
	t := o.Targets
	if t.Selector == "" {
		t.All = false
	}
	return t
}

// printNone is status of a selection that matched nothing (said on
// stderr): no table, as kubectl's "No resources found"; json and yaml
// print an empty list, so a script's parser reads a document.
func (o *statusOptions) printNone() error {
	switch o.f.Global.Output {
	case "json", "yaml":
		return o.f.Print(statusList{Result: reconcile.Result{Spores: []reconcile.SporeHealth{}}, now: o.f.Now()})
	}
	return nil
}

// watch prints the table, then the rows that changed, until ctx ends.
func (o *statusOptions) watch(ctx context.Context) error {
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	var ok bool
	if o.IDs, ok, err = resolveTargets(ctx, o.f, st, o.IDs, o.selection()); err != nil || !ok {
		return err
	}
	ps := o.f.Pass(st)
	w := &waiter{changes: storeChanges(ctx, o.f, st), interval: o.Interval, ids: map[string]bool{}}
	for _, id := range o.IDs {
		w.ids[id] = true
	}
	p := &streamPrinter{f: o.f}
	last := map[string]reconcile.SporeHealth{}
	for first := true; ; first = false {
		out, err := ps.Run(ctx, reconcile.Options{IDs: o.IDs})
		if err != nil {
			return err
		}
		if first && out.Missing != nil {
			return fmt.Errorf("status: %w", out.Missing)
		}
		changed := statusWatch{now: o.f.Now()}
		seen := map[string]bool{}
		for _, s := range out.Spores {
			seen[s.ID] = true
			if prev, ok := last[s.ID]; !first && ok && sameStatusRow(prev, s) {
				continue
			}
			last[s.ID] = s
			changed.Spores = append(changed.Spores, s)
		}
		for id, s := range last {
			if !seen[id] {
				delete(last, id)
				s.Desired, s.Effective, s.Reason = "DELETED", "DELETED", "deleted from the store"
				changed.Spores = append(changed.Spores, s)
				changed.Deleted = append(changed.Deleted, id)
			}
		}
		if first || len(changed.Spores) > 0 {
			if err := p.print(changed); err != nil {
				return err
			}
		}
		if err := w.wait(ctx); err != nil {
			return err
		}
	}
}

// sameStatusRow reports whether a and b print the same row in every
// column but AGE (which changes with the clock, not the spore).
func sameStatusRow(a, b reconcile.SporeHealth) bool {
	_, ra := statusList{Result: reconcile.Result{Spores: []reconcile.SporeHealth{a}}}.Table(true)
	_, rb := statusList{Result: reconcile.Result{Spores: []reconcile.SporeHealth{b}}}.Table(true)
	x, y := ra[0], rb[0]
	return slices.Equal(x[:len(x)-1], y[:len(y)-1])
}

// statusWatch is one print of `status -w`: the spores whose row changed
// (every spore, the first time) and the ids deleted since the last.
type statusWatch struct {
	Spores  []reconcile.SporeHealth `json:"spores"`
	Deleted []string                `json:"deleted,omitempty"`
	now     time.Time
}

func (w statusWatch) Table(wide bool) ([]string, [][]string) {
	return statusList{Result: reconcile.Result{Spores: w.Spores}, now: w.now}.Table(wide)
}

func (w statusWatch) Names() []string {
	return statusList{Result: reconcile.Result{Spores: w.Spores}}.Names()
}

// healthReport warns about orphans and turns what a pass found into the
// error that gives the documented exit code: missing ids (4), a failed
// observation or spores needing attention (3).
func healthReport(f *Factory, verb string, out *reconcile.Outcome) error {
	warnOrphans(f, out.Orphans)
	if out.Missing != nil {
		return fmt.Errorf("%s: %w", verb, out.Missing)
	}
	if out.ObserveErr != nil {
		return &UnhealthyError{Msg: verb + ": observation failed: " + out.ObserveErr.Error()}
	}
	bad := 0
	for _, s := range out.Spores {
		if !policy.OK(s.Effective) {
			bad++
		}
	}
	return attention(bad, len(out.Spores), out.Orphans)
}

// warnOrphans says on stderr which runtime objects are orphans.
func warnOrphans(f *Factory, orphans []string) {
	if len(orphans) > 0 {
		fmt.Fprintf(f.IO.ErrOut, "warning: %d runtime object(s) carry sporectl's marks but no spore in the store has their id: %s (remove with 'sporectl delete --orphan ID')\n",
			len(orphans), strings.Join(orphans, ", "))
	}
}

// attention is the exit-3 error of bad spores of n needing attention,
// or of orphans; nil when there are neither.
func attention(bad, n int, orphans []string) error {
	if bad > 0 || len(orphans) > 0 {
		return &UnhealthyError{Msg: fmt.Sprintf("%d of %d spores need attention, %d orphan(s)", bad, n, len(orphans))}
	}
	return nil
}

// statusList is `status -o json` (DESIGN "Commands"); now is the clock the
// age column is read against.
type statusList struct {
	reconcile.Result
	now time.Time
}

// Table is the status table; wide adds kubectl's extra columns: restarts,
// queued prompts, the Claude session, the image and the age, and when
// its next scheduled prompt is due (docs/schedules.md).
func (l statusList) Table(wide bool) ([]string, [][]string) {
	h := []string{"ID", "COLONY", "RANK", "DESIRED", "OBSERVED", "EFFECTIVE", "LAST-SEQ", "REASON"}
	if wide {
		h = append(h, "RESTARTS", "PENDING", "SESSION", "IMAGE", "AGE", "NEXT")
	}
	rows := make([][]string, 0, len(l.Spores))
	for _, s := range l.Spores {
		obs := string(s.Observed.Pod) + "/" + string(s.Observed.Bridge)
		if s.Observed.Activity != "" {
			obs += "/" + string(s.Observed.Activity)
		}
		row := []string{s.ID, s.Colony, string(s.Rank), string(s.Desired), obs, string(s.Effective), strconv.FormatUint(s.LastSeq, 10), orDash(s.Reason)}
		if wide {
			row = append(row, strconv.Itoa(s.Observed.Restarts), strconv.Itoa(s.Pending), orDash(s.Observed.SessionID), orDash(s.Image), age(l.now, s.Created), nextText(s.NextSchedule))
		}
		rows = append(rows, row)
	}
	return h, rows
}

// jsonList: -o json writes the spores one by one (printer_list.go).
func (l statusList) jsonList() (any, string, int, func(int) any) {
	doc := l
	doc.Spores = nil
	return doc, "spores", len(l.Spores), func(i int) any { return &l.Spores[i] }
}

func (l statusList) Names() []string {
	out := make([]string, len(l.Spores))
	for i, s := range l.Spores {
		out[i] = "spore/" + s.ID
	}
	return out
}

// nextText is a next scheduled prompt's time as the table shows it.
func nextText(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.UTC().Format("2006-01-02T15:04Z")
}
