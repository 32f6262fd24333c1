package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/transcript"
	"github.com/sporectl/sporectl/state"
)

type logsOptions struct {
	f        *Factory
	ID       string
	Follow   bool
	Tail     int
	Previous bool
}

// newCmdLogs builds the command; runF, when not nil, is called instead of
// running it (tests of what the flags parse into).
func newCmdLogs(f *Factory, runF func(context.Context, *logsOptions) error) *cobra.Command {
	o := &logsOptions{f: f}
	cmd := &cobra.Command{
		Use:   "logs ID [-f] [--tail N] [--previous]",
		Short: "Print a spore's runtime log: its bridge's and its agent's stderr",
		Long: `Print the runtime log of a spore, as kubectl logs does: what its bridge and its
agent (Claude Code) wrote on stderr — why a bridge would not start, the agent's
complaints — not the conversation ('sporectl chat' has that). On the local
runtime it is the bridge's run log; on kube, the bridge container's log through
the API server (see "Runtimes" in the docs).

--previous prints the log of the bridge before the current one (the previous
container; on the local runtime, the run before the last start), --tail N its
last N lines, and -f goes on printing what is written until Ctrl-C, which ends
it quietly (exit 0). Control characters are shown as visible escapes, and the
spore's tokens never: a line holding one shows [redacted] instead.

Exits 4 when the spore does not exist or has no such log, 9 when the runtime
cannot be asked.`,
		Args: sporeIDs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ID = args[0]
			if o.Tail < -1 {
				return usageErrorf("invalid value %d for --tail: a number of lines, or -1 for all", o.Tail)
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.run(cmd.Context())
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&o.Follow, "follow", "f", false, "go on printing what is written, until Ctrl-C")
	fl.IntVar(&o.Tail, "tail", -1, "print only the last N lines (-1: all)")
	fl.BoolVarP(&o.Previous, "previous", "p", false, "print the log of the bridge before the current one")
	return cmd
}

func (o *logsOptions) run(ctx context.Context) error {
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.View(ctx, func(tx state.Tx) error {
		_, err := tx.Spore(ctx, o.ID)
		return err
	}); err != nil {
		return fmt.Errorf("logs %s: %w", o.ID, err)
	}
	rt, err := o.f.Runtime(ctx, st)
	if err != nil {
		return err
	}
	w := &lineSanitizer{w: o.f.IO.Out}
	err = rt.Logs(ctx, o.ID, reconcile.LogOptions{Tail: o.Tail, Follow: o.Follow, Previous: o.Previous}, w)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	switch {
	case err == nil:
		return nil
	case o.Follow && errors.Is(err, context.Canceled):
		// Ctrl-C is how a followed log ends.
		return nil
	case errors.Is(err, state.ErrNotFound), errors.Is(err, context.Canceled):
		return err
	}
	return &RuntimeError{Op: "logs " + o.ID, Err: err}
}

// lineSanitizer writes each line of a log with its control characters,
// ANSI escapes and bidirectional overrides made visible (an ESC as \x1b),
// as every printer of sporectl does: a log holds what an agent wrote.
type lineSanitizer struct {
	w       io.Writer
	pending []byte
}

func (s *lineSanitizer) Write(p []byte) (int, error) {
	s.pending = append(s.pending, p...)
	for {
		i := bytes.IndexByte(s.pending, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := bytes.TrimSuffix(s.pending[:i], []byte("\r"))
		if _, err := io.WriteString(s.w, transcript.Sanitize(string(line))+"\n"); err != nil {
			return 0, err
		}
		s.pending = s.pending[i+1:]
	}
}

// Flush writes an unfinished last line.
func (s *lineSanitizer) Flush() error {
	if len(s.pending) == 0 {
		return nil
	}
	_, err := io.WriteString(s.w, transcript.Sanitize(string(s.pending)))
	s.pending = nil
	return err
}
