package cli

import (
	"context"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/internal/quote"
	"github.com/sporectl/sporectl/state"
)

type outboxOptions struct {
	f  *Factory
	ID string
}

// newCmdOutbox builds the command; runF, when not nil, is called instead
// of running it (tests of what the arguments parse into).
func newCmdOutbox(f *Factory, runF func(context.Context, *outboxOptions) error) *cobra.Command {
	o := &outboxOptions{f: f}
	cmd := &cobra.Command{
		Use:   "outbox ID | outbox drop ID MSG",
		Short: "List a spore's queued messages and dead letters; drop one",
		Long: `List what waits in a spore's outbox, in queue order: its queued messages
(prompts, tells, summonses not yet delivered) and its dead letters (entries its
bridge refused for good, moved out of the queue so what was behind them is
delivered; see "Delivery" under "The bridge" in the docs). A dead letter stays until it is dropped.

The table shows each entry's id, its state (queued or dead), its sender, when
it was queued, its size in bytes and, for a dead letter, why. -o json and
-o yaml add each entry's text.

'sporectl outbox drop ID MSG' removes one entry, queued or dead.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageErrorf("unknown subcommand %s for %s: use 'outbox ID' or 'outbox drop ID MSG'", quote.Value(args[0]), cmd.CommandPath())
			}
			return sporeIDs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ID = args[0]
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.run(cmd.Context())
		},
	}
	cmd.AddCommand(newCmdOutboxDrop(f, nil))
	return cmd
}

// outboxRow is one entry in outbox's list. Dead is set on a dead letter.
type outboxRow struct {
	ID         string            `json:"id"`
	State      string            `json:"state"` // queued | dead
	From       string            `json:"from"`
	At         time.Time         `json:"at"`
	Bytes      int               `json:"bytes"`
	Wake       bool              `json:"wake,omitempty"`
	OverBudget bool              `json:"over_budget,omitempty"`
	Dead       *state.DeadLetter `json:"dead,omitempty"`
	Text       string            `json:"text"`
}

// outboxList is what outbox prints.
type outboxList struct {
	Spore  string      `json:"spore"`
	Queued []outboxRow `json:"queued"`
	Dead   []outboxRow `json:"dead"`
}

func (l outboxList) Table(wide bool) ([]string, [][]string) {
	rows := make([][]string, 0, len(l.Queued)+len(l.Dead))
	for _, list := range [][]outboxRow{l.Queued, l.Dead} {
		for _, r := range list {
			reason := "-"
			if r.Dead != nil {
				reason = r.Dead.Reason
			}
			row := []string{r.ID, r.State, r.From, r.At.UTC().Format(time.RFC3339), strconv.Itoa(r.Bytes), reason}
			if wide {
				dead := "-"
				if r.Dead != nil {
					dead = r.Dead.At.UTC().Format(time.RFC3339)
				}
				row = append(row, dead)
			}
			rows = append(rows, row)
		}
	}
	head := []string{"MESSAGE", "STATE", "FROM", "QUEUED", "BYTES", "REASON"}
	if wide {
		head = append(head, "DEAD-SINCE")
	}
	return head, rows
}

func (l outboxList) Names() []string {
	out := make([]string, 0, len(l.Queued)+len(l.Dead))
	for _, list := range [][]outboxRow{l.Queued, l.Dead} {
		for _, r := range list {
			out = append(out, "message/"+r.ID)
		}
	}
	return out
}

func outboxRowOf(e state.OutboxEntry) outboxRow {
	r := outboxRow{ID: e.ID, State: "queued", From: e.From, At: e.At.UTC(), Bytes: len(e.Text), Wake: e.Wake, OverBudget: e.OverBudget, Text: e.Text}
	if e.Dead != nil {
		d := *e.Dead
		r.State, r.Dead = "dead", &d
	}
	return r
}

// run reads the spore's outbox and dead letters in one snapshot. It runs
// no pass: what is listed is what the store holds, as a pass would find
// it.
func (o *outboxOptions) run(ctx context.Context) error {
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	l := outboxList{Spore: o.ID, Queued: []outboxRow{}, Dead: []outboxRow{}}
	err = st.View(ctx, func(tx state.Tx) error {
		queued, err := tx.Outbox(ctx, o.ID)
		if err != nil {
			return err
		}
		dead, err := tx.DeadLetters(ctx, o.ID)
		if err != nil {
			return err
		}
		for _, e := range queued {
			l.Queued = append(l.Queued, outboxRowOf(e))
		}
		for _, e := range dead {
			l.Dead = append(l.Dead, outboxRowOf(e))
		}
		return nil
	})
	if err != nil {
		return err
	}
	return o.f.Print(l)
}
