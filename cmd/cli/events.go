package cli

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

type eventsOptions struct {
	f     *Factory
	ID    string
	Since uint64
	Limit int
	Tail  int
	Watch bool
	// Interval is how often a watch observes the bridge (--watch-interval).
	Interval time.Duration
}

// newCmdEvents builds the command; runF, when not nil, is called instead of
// running it (tests of what the flags parse into).
func newCmdEvents(f *Factory, runF func(context.Context, *eventsOptions) error) *cobra.Command {
	o := &eventsOptions{f: f}
	cmd := &cobra.Command{
		Use:   "events ID",
		Short: "Print a spore's event log from the store",
		Long: `Print a spore's event log from the store, after ingesting what its bridge
wrote since the last command.

--watch (-w) keeps printing new events as they arrive, as tail -f does: it
wakes on the store's change notices and on the bridge's next line, and looks
every --watch-interval in any case. -o json prints one event per line (JSON
lines). Ctrl-C ends it quietly with exit 0.`,
		Args: sporeIDs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ID = args[0]
			if o.Limit < 0 {
				return usageErrorf("invalid value %d for --limit: must be 0 (no limit) or more", o.Limit)
			}
			if o.Tail < 0 {
				return usageErrorf("invalid value %d for --tail: must be 0 (off) or more", o.Tail)
			}
			if o.Tail > 0 && cmd.Flags().Changed("since") {
				return usageErrorf("--tail and --since cannot be used together")
			}
			if o.Watch && o.Limit > 0 {
				return usageErrorf("--limit and --watch cannot be used together")
			}
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
	fl.Uint64Var(&o.Since, "since", 0, "only events with a sequence number greater than this")
	fl.IntVar(&o.Limit, "limit", 0, "at most this many events (0: all)")
	fl.IntVar(&o.Tail, "tail", 0, "only the last N events")
	fl.BoolVarP(&o.Watch, "watch", "w", false, "keep printing new events as they arrive (Ctrl-C ends)")
	fl.DurationVar(&o.Interval, "watch-interval", DefaultWatchInterval, "with --watch: how often to look at the bridge when nothing woke the watch")
	return cmd
}

// eventsPage bounds one read of the log while watching.
const eventsPage = 5000

// watch prints the log as run does (from --since, or the last --tail
// events), then every event appended after it, until ctx ends.
func (o *eventsOptions) watch(ctx context.Context) error {
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	ps := o.f.Pass(st)
	w := &waiter{changes: storeChanges(ctx, o.f, st), interval: o.Interval, ids: map[string]bool{o.ID: true},
		// The bridge's next line ends the wait early; the pass below
		// ingests it. A bridge that is down makes Wait return at once,
		// and the interval bounds the loop then.
		bridge: func(ctx context.Context) {
			if ps.Wait(ctx, o.ID, o.Interval) != nil {
				<-ctx.Done()
			}
		}}
	p := &streamPrinter{f: o.f}
	after := o.Since
	tail := o.Tail
	for {
		out, err := ps.Run(ctx, reconcile.Options{IDs: []string{o.ID}})
		if err != nil {
			return err
		}
		if out.Missing != nil {
			return out.Missing
		}
		for {
			var page eventList
			err := st.View(ctx, func(tx state.Tx) error {
				h, err := tx.Head(ctx, o.ID)
				if err != nil {
					return err
				}
				page = eventList{Spore: o.ID, LastSeq: h.LastSeq}
				if tail > 0 {
					page.Events, err = tx.Tail(ctx, o.ID, tail)
				} else {
					page.Events, err = tx.Events(ctx, o.ID, after, eventsPage)
				}
				return err
			})
			if err != nil {
				return err
			}
			tail = 0
			if len(page.Events) == 0 {
				if !p.wrote && o.f.Global.Output != "json" && o.f.Global.Output != "yaml" {
					// The header, so the columns are there before the first event.
					if err := p.print(page); err != nil {
						return err
					}
				}
				break
			}
			after = page.Events[len(page.Events)-1].Seq
			if err := o.printEach(p, page); err != nil {
				return err
			}
			if len(page.Events) < eventsPage {
				break
			}
		}
		if err := w.wait(ctx); err != nil {
			return err
		}
	}
}

// printEach prints a watch's page: a table's rows, or one document per
// event (JSON lines, YAML documents), as chat -f does.
func (o *eventsOptions) printEach(p *streamPrinter, page eventList) error {
	switch o.f.Global.Output {
	case "json", "yaml":
		for _, e := range page.Events {
			var err error
			if o.f.Global.Output == "json" {
				err = o.f.PrintLine(e)
			} else {
				err = p.print(eventList{Spore: page.Spore, LastSeq: e.Seq, Events: []state.Event{e}})
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	return p.print(page)
}

func (o *eventsOptions) run(ctx context.Context) error {
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	// Like every command, it first ingests what the bridge wrote since the
	// last one, so the log shown is the whole one.
	pass, err := o.f.Pass(st).Run(ctx, reconcile.Options{IDs: []string{o.ID}})
	if err != nil {
		return err
	}
	if pass.Missing != nil {
		return pass.Missing
	}
	out := eventList{Spore: o.ID}
	err = st.View(ctx, func(tx state.Tx) error {
		h, err := tx.Head(ctx, o.ID)
		if err != nil {
			return err
		}
		out.LastSeq = h.LastSeq
		if o.Tail > 0 {
			out.Events, err = tx.Tail(ctx, o.ID, o.Tail)
		} else {
			out.Events, err = tx.Events(ctx, o.ID, o.Since, o.Limit)
		}
		return err
	})
	if err != nil {
		return err
	}
	if out.Events == nil {
		out.Events = []state.Event{}
	}
	return o.f.Print(out)
}

type eventList struct {
	Spore   string        `json:"spore"`
	LastSeq uint64        `json:"last_seq"`
	Events  []state.Event `json:"events"`
}

func (l eventList) Table(wide bool) ([]string, [][]string) {
	h := []string{"SEQ", "AT", "KIND", "FROM", "SUMMARY"}
	if wide {
		h = []string{"SEQ", "AT", "KIND", "FROM", "BRIDGE-SEQ", "SUMMARY"}
	}
	rows := make([][]string, 0, len(l.Events))
	for _, e := range l.Events {
		row := []string{strconv.FormatUint(e.Seq, 10), e.At.UTC().Format(time.RFC3339), string(e.Kind), orDash(e.From)}
		if wide {
			bs := "-"
			if e.BridgeSeq > 0 {
				bs = strconv.FormatUint(e.BridgeSeq, 10)
			}
			row = append(row, bs)
		}
		rows = append(rows, append(row, summary(e, wide)))
	}
	return h, rows
}

func (l eventList) Names() []string {
	out := make([]string, len(l.Events))
	for i, e := range l.Events {
		out[i] = "event/" + l.Spore + "/" + strconv.FormatUint(e.Seq, 10)
	}
	return out
}

// summary is one printable line for an event; wide does not truncate.
func summary(e state.Event, wide bool) string {
	var s string
	switch {
	case e.Kind == state.KindAgent && len(e.Line) > 0:
		s = agentSummary(e.Line)
	case e.Action != "" && e.Text != "":
		s = e.Action + ": " + e.Text
	case e.Action != "":
		s = e.Action
	default:
		s = e.Text
	}
	// A summary is one line: runs of ordinary white space (spaces, tabs,
	// line breaks) become one space. Every other control character stays,
	// for the printer to show as a visible escape (ESC as \x1b, BEL as
	// \x07, docs/cli.md): blanking it would hide that an agent's text held
	// an escape sequence.
	s = strings.Join(strings.FieldsFunc(s, isBlank), " ")
	if !wide && len(s) > 80 {
		cut := 77
		for cut > 0 && !isRuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return orDash(s)
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// isBlank is the white space a summary folds: not every unicode.IsSpace
// (NEL U+0085 and the line separators are controls the printer escapes).
func isBlank(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' }

// agentSummary names the line's type; the bridge package parses lines
// fully, this only needs a label.
func agentSummary(line json.RawMessage) string {
	var v struct {
		Type    string `json:"type"`
		Subtype string `json:"subtype"`
	}
	if json.Unmarshal(line, &v) != nil || v.Type == "" {
		return string(line)
	}
	if v.Type == "assistant" || v.Type == "user" {
		if t := firstText(line); t != "" {
			return v.Type + ": " + t
		}
	}
	if v.Subtype != "" {
		return v.Type + "/" + v.Subtype
	}
	return v.Type
}

// firstText is the first text block of a stream-json message line.
func firstText(line json.RawMessage) string {
	var m struct {
		Message struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"message"`
	}
	if json.Unmarshal(line, &m) != nil {
		return ""
	}
	for _, c := range m.Message.Content {
		if c.Type == "text" && c.Text != "" {
			return c.Text
		}
	}
	return ""
}
