package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/internal/quote"
	"github.com/sporectl/sporectl/reconcile/outbox"
	"github.com/sporectl/sporectl/state"
)

type promptOptions struct {
	f       *Factory
	ID      string
	Text    string
	From    string
	Wake    bool
	Timeout time.Duration
	// OverBudget is --over-budget: deliver it to a spore over its budget.
	OverBudget bool
}

// newCmdPrompt builds the command; runF, when not nil, is called instead of
// the run function (tests check flag parsing with it).
func newCmdPrompt(f *Factory, runF func(context.Context, *promptOptions) error) *cobra.Command {
	o := &promptOptions{f: f}
	cmd := &cobra.Command{
		Use:   "prompt ID TEXT|-",
		Short: "Send a person's prompt to a spore: delivered now if it is awake, queued if it is working",
		Long: `Send a prompt. One transaction records it in the spore's event log and in its
outbox with a fresh id; then it is posted to the spore's bridge with that id as
the idempotency key and marked delivered in a later transaction. If anything
dies in between, the next command or reconcile delivers it again and the bridge
answers "duplicate": it reaches the agent exactly once.

A working spore's bridge queues it (the output says at which position). A
sleeping spore is refused (exit 10) unless --wake, which sets desired Running,
starts it and delivers once its bridge answers (waiting up to --timeout; after
that it stays in the outbox and the next reconcile delivers it).

A spore over its daily budget (see "Budgets" in the docs) is not given it: the prompt is
queued, delivered the next UTC day or once the budget is raised, and prompt
exits 16 saying so. --over-budget, a person's decision, delivers it anyway,
waking a spore that a budget put to sleep (one a person put to sleep still
needs --wake).

TEXT "-" reads the prompt from standard input. Prompts must be valid UTF-8,
not empty, at most 256 KiB as the agent reads them, and hold no control
character but newline and tab (exit 2 otherwise, nothing sent). --from names
the sender in the store only: the agent reads the text alone, with no sender's
mark, and a part of it shaped like one ("[from …") is rewritten as
"[quoted: from …", so a prompt cannot pass for a message from a spore; the
256 KiB hold for the rewritten text.

A prompt the spore's bridge refuses for good (see "Delivery" under "The bridge" in the docs)
becomes a dead letter: prompt says so and exits 9; 'sporectl outbox ID' lists
it.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageErrorf("%s takes a spore id and the prompt text (or - for stdin), got %d argument(s)", cmd.CommandPath(), len(args))
			}
			return sporeIDs(1)(cmd, args[:1])
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ID, o.Text = args[0], args[1]
			if o.Text == "-" {
				b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), bridge.MaxPromptBytes+1))
				if err != nil {
					return fmt.Errorf("read the prompt from stdin: %w", err)
				}
				// A file from another system ends its lines with CRLF; the
				// agent's prompt has LF, as the page's box gives it. A lone
				// CR is still refused.
				o.Text = strings.ReplaceAll(string(b), "\r\n", "\n")
			}
			if o.From == "" {
				o.From = "user:" + userName(o.f.Getenv)
			}
			if err := validatePrompt(o.Text, o.From); err != nil {
				return err
			}
			if o.Timeout < 0 {
				return usageErrorf("invalid value %s for --timeout: must be 0 or more", o.Timeout)
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.run(cmd.Context())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.From, "from", "", `who sends it, e.g. "user:alice" (default "user:$USER")`)
	fl.BoolVar(&o.Wake, "wake", false, "wake a sleeping spore to deliver it")
	fl.BoolVar(&o.OverBudget, "over-budget", false, "deliver it even though the spore is over its budget")
	fl.DurationVar(&o.Timeout, "timeout", time.Minute, "with --wake, how long to wait for the bridge before leaving the prompt queued")
	return cmd
}

func userName(getenv func(string) string) string {
	if u := getenv("USER"); u != "" && state.ValidateName("user", u) == nil {
		return u
	}
	return "operator"
}

// validatePrompt refuses what a bridge would refuse (bridge.CheckText),
// before anything is written.
func validatePrompt(text, from string) error {
	if e := bridge.CheckText(text, bridge.MaxPromptBytes); e != nil {
		if e.Problem == bridge.TextTooLarge {
			return usageErrorf("the prompt is %d bytes or more; at most %d are allowed", e.Len, e.Max)
		}
		return usageErrorf("%s", e.Of("the prompt"))
	}
	// The bound holds for what the bridge is given: the text with each
	// "[from" rewritten (outbox.Compose), which can be longer.
	if e := outbox.CheckFramed(outbox.Message{Kind: state.KindPrompt, Text: text}); e != nil {
		return usageErrorf("the prompt is %d bytes, and %d as the agent would read it (each \"[from\" rewritten as %q); at most %d are allowed: nothing was sent",
			e.Text, e.Framed, outbox.Quoted, e.Max)
	}
	if from == "" || len(from) > 128 || !utf8.ValidString(from) || strings.ContainsFunc(from, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return usageErrorf("invalid value %s for --from: want a short name without control characters, e.g. user:alice", quote.Value(from))
	}
	return nil
}

// promptResult is what prompt prints.
type promptResult struct {
	Spore    string `json:"spore"`
	ID       string `json:"id"`
	State    string `json:"state"` // delivered, queued, waiting, dead
	Position int    `json:"position,omitempty"`
	Detail   string `json:"detail,omitempty"`
}

func (r promptResult) Table(bool) ([]string, [][]string) {
	s := "prompt/" + r.ID + " "
	switch r.State {
	case "delivered":
		s += "delivered to spore/" + r.Spore
	case "queued":
		s += fmt.Sprintf("queued at position %d by spore/%s", r.Position, r.Spore)
	case "dead":
		s += "refused for good by the bridge of spore/" + r.Spore + " (" + r.Detail + "): it is a dead letter now (sporectl outbox " + r.Spore + ")"
	default:
		s += "waiting in the outbox of spore/" + r.Spore + ": " + r.Detail
	}
	return nil, [][]string{{s}}
}

func (r promptResult) Names() []string { return []string{"prompt/" + r.ID} }

func (o *promptOptions) run(ctx context.Context) error {
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	// A person's prompt has no Mark; Send composes what the agent reads.
	entry, err := outbox.Send(ctx, st, outbox.Message{To: o.ID, From: o.From, Kind: state.KindPrompt, Text: o.Text, Wake: o.Wake, OverBudget: o.OverBudget}, o.f.Now())
	var over *OverBudgetError
	if errors.As(err, &over) {
		// Recorded: it waits in the outbox for the budget.
		if perr := o.f.Print(promptResult{Spore: o.ID, ID: entry.ID, State: "waiting", Detail: "over budget (" + over.Over + ")"}); perr != nil {
			return perr
		}
		return err
	}
	if err != nil {
		return err
	}
	// A spore that was awake already needs one try. A woken one (by
	// --wake, or idle-slept in a colony that wakes on a message: Send
	// marks the entry) is given until the timeout to come up.
	wait := time.Duration(0)
	if entry.Wake {
		wait = o.Timeout
	}
	d, err := o.f.Pass(st).Deliver(ctx, entry, entry.Wake, wait)
	if err != nil {
		return err
	}
	if err := o.f.Print(promptResult{Spore: o.ID, ID: entry.ID, State: d.State, Position: d.Position, Detail: d.Detail}); err != nil {
		return err
	}
	if d.State == "dead" {
		return &RuntimeError{Op: "deliver prompt " + entry.ID + " to spore " + o.ID, Err: errors.New("its bridge refused it for good: " + d.Detail)}
	}
	return nil
}
