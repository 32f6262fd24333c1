package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// DefaultDescribeEvents is how many of a spore's last events describe
// shows unless --events says otherwise.
const DefaultDescribeEvents = 10

// maxDescribeEvents bounds --events: describe is one screen, `events`
// pages through a whole log.
const maxDescribeEvents = 1000

type describeOptions struct {
	f   *Factory
	IDs []string
	// Events is --events: how many of each spore's last events to show
	// (0: none).
	Events int
}

// newCmdDescribe builds the command; runF, when not nil, is called
// instead of running it (tests of what the arguments parse into).
func newCmdDescribe(f *Factory, runF func(context.Context, *describeOptions) error) *cobra.Command {
	o := &describeOptions{f: f}
	cmd := &cobra.Command{
		Use:   "describe ID...",
		Short: "Show everything about spores, one screen each: wish, status, observed, spend, outbox, events",
		Long: `Show everything sporectl knows of each spore named, as kubectl describe does:
its wish (desired state, generation, colony, rank, swarm, labels, budget,
sleep-after, pod options), its status (effective health and reason,
restarts, breaker and backoff with the next retry's time, last seq), what is
observed of it right now (process or pod, bridge, the agent's activity and
since when), what it spent today (the judged spend and, with the model
gateway on, the agent's own report beside it), its outbox (queued, held, the
oldest entry's age, dead letters), its next scheduled prompt, and its last
--events events. Several ids are described one after the other, separated by
a blank line.

Like status ID it observes the named spores only and ingests their new
lines; it never starts, stops or delivers anything. A spore whose record is
damaged is still described, with the damage as its reason. -o json and -o
yaml give the same content as a document ({"spores": [...]}, see Commands in
the docs). Exits 4 when an id is not in the store (after describing the
others); a spore's health does not change the exit code (status does that).`,
		Args: sporeIDs(-1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Events < 0 || o.Events > maxDescribeEvents {
				return usageErrorf("invalid value %d for --events: want 0 (none) to %d", o.Events, maxDescribeEvents)
			}
			o.IDs = args
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.run(cmd.Context())
		},
	}
	cmd.Flags().IntVar(&o.Events, "events", DefaultDescribeEvents, "how many of each spore's last events to show (0: none)")
	return cmd
}

func (o *describeOptions) run(ctx context.Context) error {
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	// The pass status ID runs: one snapshot of the named spores only, one
	// observation of them, their new lines ingested.
	out, err := o.f.Pass(st).Run(ctx, reconcile.Options{IDs: o.IDs})
	if err != nil {
		return err
	}
	// Then one read for what the pass does not hand back: the settings
	// (the colony's budget and sleep-after) and each spore's last events.
	var settings state.Settings
	tails := make(map[string]eventTail, len(out.Spores))
	err = st.View(ctx, func(tx state.Tx) error {
		var err error
		if settings, err = tx.Settings(ctx); err != nil {
			return fmt.Errorf("read settings: %w", err)
		}
		for _, h := range out.Spores {
			t := eventTail{}
			if o.Events > 0 {
				// One spore's damaged log is shown in its description, not
				// made the command's failure.
				t.events, t.err = tx.Tail(ctx, h.ID, o.Events)
			}
			tails[h.ID] = t
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("describe: %w", err)
	}
	plans := make(map[string]*reconcile.SporePlan, len(out.Plans))
	for _, p := range out.Plans {
		plans[p.Spore.ID] = p
	}
	in := describeInput{settings: settings, now: o.f.Now(), counted: out.Counted, observeErr: out.ObserveErr}
	var l describeList
	for _, h := range out.Spores {
		in.health, in.plan, in.tail = h, plans[h.ID], tails[h.ID]
		l.Spores = append(l.Spores, describeSpore(in))
	}
	l.now = in.now
	if len(l.Spores) > 0 {
		if err := o.f.Print(l); err != nil {
			return err
		}
	}
	if out.Missing != nil {
		return fmt.Errorf("describe: %w", out.Missing)
	}
	return nil
}

// eventTail is a spore's last events, or why they could not be read.
type eventTail struct {
	events []state.Event
	err    error
}
