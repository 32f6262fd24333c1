package server

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/sporectl/sporectl/bridge/eventlog"
)

// pump reads the agent's stdout line by line, makes each line safe
// (eventlog.Normalize: bad JSON and bad UTF-8 become strings, giant lines
// a truncation marker) and emits it. It returns at EOF or on a read error;
// a final line without a newline is still a line.
func (s *Server) pump(r io.Reader, watch *turnWatch) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var acc []byte // the line so far, when it outgrew the buffer
	total := 0     // its full length, when it outgrew MaxLine
	for {
		b, err := br.ReadSlice('\n')
		switch {
		case err == nil || (errors.Is(err, io.EOF) && (len(b) > 0 || len(acc) > 0 || total > 0)):
			b = bytes.TrimSuffix(b, []byte{'\n'})
			var line []byte
			switch {
			case total > 0:
				total += len(b)
				line = eventlog.Truncated(acc, total)
			case acc != nil:
				line = eventlog.Normalize(append(acc, b...))
			default:
				line = eventlog.Normalize(b)
			}
			watch.see(line)
			s.emit(line)
			acc, total = nil, 0
			if err != nil {
				return nil
			}
		case errors.Is(err, bufio.ErrBufferFull):
			if total > 0 {
				total += len(b)
				continue
			}
			acc = append(acc, b...)
			if len(acc) > eventlog.MaxLine {
				total = len(acc)
				acc = acc[:eventlog.TruncatedHead:eventlog.TruncatedHead]
			}
		case errors.Is(err, io.EOF):
			return nil
		default:
			return fmt.Errorf("read agent output: %w", err)
		}
	}
}
