package cli

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/transcript"
	"github.com/sporectl/sporectl/state"
)

type chatOptions struct {
	f      *Factory
	ID     string
	Since  uint64
	Follow bool
}

// newCmdChat builds the command; runF, when not nil, is called instead of
// the run function (tests check flag parsing with it).
func newCmdChat(f *Factory, runF func(context.Context, *chatOptions) error) *cobra.Command {
	o := &chatOptions{f: f}
	cmd := &cobra.Command{
		Use:   "chat ID",
		Short: "Print a spore's conversation from the store, as a person reads it",
		Long: `Print the conversation: prompts with their sender, the agent's text, tool calls
summarised on one line, results, errors and lifecycle events. It is read from
the store after ingesting what the bridge wrote since the last command, so it
works while the spore sleeps. Control characters in any line are shown
escaped, never passed to the terminal.

--follow keeps printing as lines arrive: it long-polls the bridge, ingests
into the store and prints from the store, and carries on when the bridge
restarts. Ctrl-C ends it quietly, with exit 0. -o json prints the store's events instead of text.`,
		Args: sporeIDs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ID = args[0]
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			err := o.run(cmd.Context())
			if o.Follow && errors.Is(err, context.Canceled) && cmd.Context().Err() != nil {
				// Ctrl-C is how a follow ends (as kubectl logs -f's does):
				// what was printed is the answer, so exit 0 and say nothing.
				return nil
			}
			return err
		},
	}
	cmd.Flags().Uint64Var(&o.Since, "since", 0, "only events with a sequence number greater than this")
	cmd.Flags().BoolVarP(&o.Follow, "follow", "f", false, "keep printing new lines as they arrive (Ctrl-C ends)")
	return cmd
}

// chatPage bounds one read of the store while printing.
const chatPage = 5000

func (o *chatOptions) run(ctx context.Context) error {
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	ps := o.f.Pass(st)
	after := o.Since
	for {
		out, err := ps.Run(ctx, reconcile.Options{IDs: []string{o.ID}})
		if err != nil {
			return err
		}
		if out.Missing != nil {
			return out.Missing
		}
		if after, err = o.print(ctx, st, after); err != nil {
			return err
		}
		if !o.Follow {
			return nil
		}
		// Wait for the bridge's next line, then ingest it through the pass.
		// When the bridge is down or restarting — or has lines the pass
		// will not take (IngestGap, BridgeLogLost), so the wait returns at
		// once — wait a while instead of spinning.
		waitErr := ps.Wait(ctx, o.ID, 30*time.Second)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if waitErr != nil || (len(out.Spores) == 1 && out.Spores[0].Code == reconcile.ReasonIngestGap || len(out.Spores) == 1 && out.Spores[0].Code == reconcile.ReasonBridgeLogLost) {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(time.Second):
			}
		}
	}
}

// print writes the store's events after after and returns the last seq
// printed.
func (o *chatOptions) print(ctx context.Context, st state.Store, after uint64) (uint64, error) {
	for {
		var evs []state.Event
		err := st.View(ctx, func(tx state.Tx) error {
			var err error
			evs, err = tx.Events(ctx, o.ID, after, chatPage)
			return err
		})
		if err != nil {
			return after, err
		}
		if len(evs) == 0 {
			return after, nil
		}
		structured := o.f.Global.Output == "json" || o.f.Global.Output == "yaml"
		switch {
		case structured && !o.Follow:
			// One document with every event, however many pages.
			return o.printDoc(ctx, st, evs)
		case structured:
			// A stream has no end: one compact JSON document per event and
			// line (JSON lines).
			for _, e := range evs {
				if err := o.f.PrintLine(e); err != nil {
					return after, err
				}
			}
		default:
			if err := transcript.WriteText(o.f.IO.Out, evs, transcript.TextOptions{}); err != nil {
				return after, err
			}
		}
		after = evs[len(evs)-1].Seq
		if len(evs) < chatPage {
			return after, nil
		}
	}
}

// printDoc prints every event from evs (the first page read) on as one
// -o json|yaml document, and returns the last seq printed.
func (o *chatOptions) printDoc(ctx context.Context, st state.Store, evs []state.Event) (uint64, error) {
	all := evs
	for len(evs) == chatPage {
		err := st.View(ctx, func(tx state.Tx) error {
			var err error
			evs, err = tx.Events(ctx, o.ID, all[len(all)-1].Seq, chatPage)
			return err
		})
		if err != nil {
			return 0, err
		}
		all = append(all, evs...)
	}
	last := all[len(all)-1].Seq
	return last, o.f.Print(eventList{Spore: o.ID, LastSeq: last, Events: all})
}
