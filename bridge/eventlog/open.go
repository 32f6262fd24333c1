package eventlog

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
)

// Open opens the log at path, creating it (and fsyncing its directory)
// when absent. It reads the whole file once to check every record and build
// the sparse index; a torn tail is cut off and the cut fsync'd.
func Open(ctx context.Context, path string, logger *slog.Logger) (*Log, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open event log %s: %w", path, err)
	}
	if errors.Is(statErr, os.ErrNotExist) {
		if err := syncDir(filepath.Dir(path)); err != nil {
			f.Close()
			return nil, fmt.Errorf("create event log %s: %w", path, err)
		}
	}
	l := &Log{f: f, path: path, notify: make(chan struct{})}
	good, err := l.scan(ctx)
	if err != nil {
		f.Close()
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("stat event log %s: %w", path, err)
	}
	if st.Size() > good {
		logger.Warn("dropping torn tail of event log", "path", path, "bytes", st.Size()-good, "last_seq", l.last)
		if err := f.Truncate(good); err != nil {
			f.Close()
			return nil, fmt.Errorf("drop torn tail of %s: %w", path, err)
		}
		if err := syncFile(f); err != nil {
			f.Close()
			return nil, fmt.Errorf("drop torn tail of %s: %w", path, err)
		}
	}
	l.size = good
	return l, nil
}

// scan checks every record, fills last and the index, and returns the
// offset just after the last complete record. Bytes after the last LF are
// the torn tail; a complete record that is bad is an error, wherever it is.
func (l *Log) scan(ctx context.Context) (int64, error) {
	br := bufio.NewReaderSize(io.NewSectionReader(l.f, 0, 1<<62), 256<<10)
	var off int64
	var lineNo int
	var buf []byte
	for {
		if lineNo%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, fmt.Errorf("read event log %s: %w", l.path, err)
			}
		}
		b, err := readLine(br, &buf)
		if errors.Is(err, io.EOF) {
			if len(b) > 0 {
				return off, nil // unfinished last record: torn tail
			}
			return off, nil
		}
		if err != nil {
			return 0, fmt.Errorf("read event log %s: %w", l.path, err)
		}
		lineNo++
		rec, perr := ParseRecord(b)
		if perr == nil && rec.Seq != l.last+1 {
			perr = fmt.Errorf("%w: sequence %d follows %d", ErrBadRecord, rec.Seq, l.last)
		}
		if perr != nil {
			// A complete record (LF included) was fsync'd and maybe served:
			// damage to it, even on the last line, is an error, never a
			// torn tail whose number could be reused.
			return 0, fmt.Errorf("event log %s line %d: %w", l.path, lineNo, perr)
		}
		l.note(rec.Seq, off)
		off += int64(len(b))
	}
}

// readLine returns the next line with its newline, or at EOF what is left
// (possibly empty). The result is valid until the next call.
func readLine(br *bufio.Reader, buf *[]byte) ([]byte, error) {
	b, err := br.ReadSlice('\n')
	if err == nil {
		return b, nil
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		return b, err
	}
	*buf = append((*buf)[:0], b...)
	for {
		b, err = br.ReadSlice('\n')
		*buf = append(*buf, b...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return *buf, err
		}
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
