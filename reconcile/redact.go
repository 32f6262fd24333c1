package reconcile

import (
	"bytes"
	"io"
)

// Redactor writes whole lines, each with every secret in it replaced by
// "[redacted]". Runtimes copy a spore's logs through one holding the
// spore's tokens: the bridge logs none, so it is a second guard, for
// whatever an agent's stderr might print. A line is held until its
// newline (or Flush), so a token split between two writes is still found.
type Redactor struct {
	w       io.Writer
	secrets []string
	pending []byte
}

func (r *Redactor) Write(p []byte) (int, error) {
	r.pending = append(r.pending, p...)
	i := bytes.LastIndexByte(r.pending, '\n')
	if i < 0 {
		if len(r.pending) < 1<<20 {
			return len(p), nil
		}
		i = len(r.pending) - 1 // a line that long goes out in pieces
	}
	if err := r.emit(r.pending[:i+1]); err != nil {
		return 0, err
	}
	r.pending = append(r.pending[:0], r.pending[i+1:]...)
	return len(p), nil
}

// Flush writes what is held of an unfinished last line.
func (r *Redactor) Flush() error {
	if len(r.pending) == 0 {
		return nil
	}
	err := r.emit(r.pending)
	r.pending = r.pending[:0]
	return err
}

func (r *Redactor) emit(b []byte) error {
	for _, s := range r.secrets {
		b = bytes.ReplaceAll(b, []byte(s), []byte("[redacted]"))
	}
	_, err := r.w.Write(b)
	return err
}

// NewRedactor writes to w with secrets replaced; secrets shorter than 8
// bytes are ignored (they would redact ordinary words, and no token is
// that short).
func NewRedactor(w io.Writer, secrets []string) *Redactor {
	r := &Redactor{w: w}
	r.SetSecrets(secrets)
	return r
}

// SetSecrets replaces the secrets redacted from now on (a restarted
// bridge has new tokens).
func (r *Redactor) SetSecrets(secrets []string) {
	r.secrets = r.secrets[:0]
	for _, s := range secrets {
		if len(s) >= 8 {
			r.secrets = append(r.secrets, s)
		}
	}
}

// Redact is text with every secret in it replaced, by the same rule as
// a Redactor: for a log read whole (`mycologist host-logs`).
func Redact(text string, secrets []string) string {
	var b bytes.Buffer
	rw := NewRedactor(&b, secrets)
	_, _ = rw.Write([]byte(text)) // a bytes.Buffer does not fail
	_ = rw.Flush()
	return b.String()
}
