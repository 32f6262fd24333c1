package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// A bridge's stderr (its own log lines, its agent's stderr, and the fatal
// error it exits with) goes to run/<id>.log; each start moves the log of
// the run before to run/<id>.previous.log, so the current log is one
// run's and `logs --previous` has the one before (kubectl's convention).
const (
	logExt         = ".log"
	previousLogExt = ".previous.log"
)

// exitLogBytes bounds what Observe reads of a dead bridge's log, from its
// end: enough for its last lines, never the whole file.
const exitLogBytes = 4 << 10

// followPoll is how often a followed log is looked at for new lines.
var followPoll = 200 * time.Millisecond

// rotateLog keeps the log of the run that ended as the previous one, so
// the log Start opens holds only the new bridge's lines (and the reason
// Observe reads from it is that bridge's). A missing log is no error.
func (r *Runtime) rotateLog(id string) error {
	err := os.Rename(r.runPath(id, logExt), r.runPath(id, previousLogExt))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("keep the previous log of %s: %w", id, err)
	}
	return nil
}

// exitLog is the end of spore id's current log, at most exitLogBytes;
// "" when there is none or it cannot be read (observation goes on
// without the bridge's words).
func (r *Runtime) exitLog(id string) string {
	f, err := os.Open(r.runPath(id, logExt))
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(st.Size()-exitLogBytes, 0)
	b := make([]byte, st.Size()-off)
	n, _ := f.ReadAt(b, off)
	return string(b[:n])
}

// Logs copies the bridge's log (its stderr and its agent's, not the
// conversation) to w: the current run's, or with opt.Previous the run's
// before it; the last opt.Tail lines only when Tail > 0, found from the
// end; with opt.Follow it goes on copying what is written, across a
// restart of the bridge, until ctx ends (then it returns ctx's error).
// The spore's tokens never reach w: a line holding one is redacted.
func (r *Runtime) Logs(ctx context.Context, id string, opt reconcile.LogOptions, w io.Writer) error {
	path := r.runPath(id, logExt)
	if opt.Previous {
		path = r.runPath(id, previousLogExt)
	}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		what := "no log"
		if opt.Previous {
			what = "no previous log (the bridge has not been restarted)"
		}
		return fmt.Errorf("logs of %s: %s: %w", id, what, state.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("logs of %s: %w", id, err)
	}
	defer func() { f.Close() }()
	rw := reconcile.NewRedactor(w, r.secrets(id))
	if opt.Tail > 0 {
		off, err := tailOffset(f, opt.Tail)
		if err != nil {
			return fmt.Errorf("logs of %s: %w", id, err)
		}
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			return fmt.Errorf("logs of %s: %w", id, err)
		}
	}
	if _, err := io.Copy(rw, f); err != nil {
		return fmt.Errorf("logs of %s: %w", id, err)
	}
	if !opt.Follow || opt.Previous {
		return rw.Flush()
	}
	for {
		select {
		case <-ctx.Done():
			_ = rw.Flush()
			return ctx.Err()
		case <-time.After(followPoll):
		}
		if _, err := io.Copy(rw, f); err != nil {
			return fmt.Errorf("logs of %s: %w", id, err)
		}
		// A start moved this log aside and opened a new one: what the
		// old one got last was copied above, go on with the new one.
		if nf, ok := replaced(f, path); ok {
			f.Close()
			f = nf
			rw.SetSecrets(r.secrets(id)) // the start issued new tokens
		}
	}
}

// replaced opens path when it is no longer the file f (a start rotated
// the log), else reports false. A truncated f is read again from its
// start.
func replaced(f *os.File, path string) (*os.File, bool) {
	cur, err1 := f.Stat()
	now, err2 := os.Stat(path)
	if err1 != nil || err2 != nil {
		return nil, false
	}
	if os.SameFile(cur, now) {
		if off, err := f.Seek(0, io.SeekCurrent); err == nil && cur.Size() < off {
			_, _ = f.Seek(0, io.SeekStart)
		}
		return nil, false
	}
	nf, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, false
	}
	return nf, true
}

// tailOffset is where the last n lines of f begin, read backwards from
// its end in blocks (a long log is never read whole). A last line without
// its newline counts as a line.
func tailOffset(f *os.File, n int) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	end := st.Size()
	buf := make([]byte, 32<<10)
	seen := 0
	for pos := end; pos > 0; {
		size := int64(len(buf))
		if pos < size {
			size = pos
		}
		pos -= size
		b := buf[:size]
		if _, err := f.ReadAt(b, pos); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		for i := len(b) - 1; i >= 0; i-- {
			if b[i] != '\n' || pos+int64(i) == end-1 {
				continue // the newline that ends the last line starts nothing
			}
			seen++
			if seen == n {
				return pos + int64(i) + 1, nil
			}
		}
	}
	return 0, nil
}

// secrets are the spore's tokens as its home holds them now.
func (r *Runtime) secrets(id string) []string {
	var out []string
	for _, p := range []string{tokenPath(r.home(id)), apiTokenPath(r.home(id))} {
		if b, err := os.ReadFile(p); err == nil {
			if t := strings.TrimSpace(string(b)); t != "" {
				out = append(out, t)
			}
		}
	}
	return out
}
