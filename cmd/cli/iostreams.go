package cli

import (
	"io"
	"os"
)

// IOStreams are where a command reads and writes: data to Out, progress,
// logs and errors to ErrOut.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

// SystemIO is the process's own standard streams.
func SystemIO() IOStreams {
	return IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
}

// isTerminal reports whether w is a terminal (progress and colour only
// go to one).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
