package cli

import (
	"io"
	"os"

	"golang.org/x/term"
)

// IOStreams are where a command reads and writes: data to Out, progress,
// logs and errors to ErrOut.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// CanPrompt says a person is there to answer a question: In and
	// ErrOut are a terminal. Only SystemIO sets it, from the process's
	// own streams; a test that fakes a terminal sets it itself. Cron,
	// scripts, pipes and /dev/null leave it false, and are never asked
	// anything.
	CanPrompt bool
}

// SystemIO is the process's own standard streams.
func SystemIO() IOStreams {
	return IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr,
		CanPrompt: isTTY(os.Stdin) && isTTY(os.Stderr)}
}

// isTerminal reports whether w is a terminal (progress and colour only
// go to one).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isTerminalFile(f)
}

// isTTY reports whether f is a terminal a person types at: the
// terminal's own ioctl answers, so /dev/null, which is a character device
// as a terminal is, is not one (cron's stdin often is /dev/null).
func isTTY(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

func isTerminalFile(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
