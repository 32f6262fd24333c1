package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// maxEvent bounds one server-sent event of a streamed answer: the
// gateway holds an event until it has read it whole (and counted it).
const maxEvent = MaxAnswer

// streamCounter is a streamed answer's body as the proxy reads it: the
// upstream's bytes, passed on one whole event at a time, each event that
// carries usage (message_start, message_delta) counted before it is.
// Events pass as they come: nothing waits for more than its own event.
type streamCounter struct {
	body  io.ReadCloser
	count func(*message) error
	msg   message
	in    []byte // read from the upstream, not judged yet
	out   []byte // judged, not yet read by the proxy
	err   error  // the upstream's end (io.EOF) or failure, or the count's, given once in is spent
	chunk [32 << 10]byte
}

func (s *streamCounter) Read(p []byte) (int, error) {
	for len(s.out) == 0 {
		if end := eventEnd(s.in); end >= 0 {
			if err := s.release(end); err != nil {
				return 0, err
			}
			continue
		}
		if s.err != nil {
			// What is left is the last event, without its blank line.
			if len(s.in) == 0 {
				return 0, s.err
			}
			if err := s.release(len(s.in)); err != nil {
				return 0, err
			}
			continue
		}
		if len(s.in) > maxEvent {
			s.err = fmt.Errorf("a streamed event of the model's answer is over %d bytes: it cannot be counted", maxEvent)
			s.in = nil
			return 0, s.err
		}
		n, err := s.body.Read(s.chunk[:])
		s.in = append(s.in, s.chunk[:n]...)
		s.err = err
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	return n, nil
}

// release judges the event in[:end] and makes it the next to pass on.
func (s *streamCounter) release(end int) error {
	if err := s.see(s.in[:end]); err != nil {
		// Nothing more passes: the answer is cut here.
		s.err, s.in = err, nil
		return err
	}
	s.out = append(s.out[:0], s.in[:end]...)
	s.in = s.in[:copy(s.in, s.in[end:])]
	return nil
}

func (s *streamCounter) Close() error { return s.body.Close() }

// see counts ev when it carries the call's usage.
func (s *streamCounter) see(ev []byte) error {
	// Most events are text; only those that may name these types are
	// read as JSON.
	if !bytes.Contains(ev, []byte("message_start")) && !bytes.Contains(ev, []byte("message_delta")) {
		return nil
	}
	var e struct {
		Type    string      `json:"type"`
		Message wireMessage `json:"message"`
		Usage   wireUsage   `json:"usage"`
	}
	if err := json.Unmarshal(eventData(ev), &e); err != nil {
		// Not JSON, or not an event the count reads (a text delta that
		// names them is JSON of another type): judged by its type below.
		e.Type = ""
	}
	switch e.Type {
	case "message_start":
		s.msg.id, s.msg.model = e.Message.ID, e.Message.Model
		mergeUsage(&s.msg.usage, e.Message.Usage)
	case "message_delta":
		if s.msg.id == "" {
			return errors.New("the model's stream sent usage before its message_start: it cannot be counted")
		}
		mergeUsage(&s.msg.usage, e.Usage)
	default:
		return nil
	}
	return s.count(&s.msg)
}

// eventEnd is where the first whole event of b ends, its blank line
// included; -1 when b holds none yet.
func eventEnd(b []byte) int {
	end := -1
	for _, sep := range [][]byte{[]byte("\n\n"), []byte("\r\n\r\n"), []byte("\r\r")} {
		if i := bytes.Index(b, sep); i >= 0 && (end < 0 || i+len(sep) < end) {
			end = i + len(sep)
		}
	}
	return end
}

// eventData is the data of an event, its data lines joined by newlines
// (the server-sent events format).
func eventData(ev []byte) []byte {
	var data [][]byte
	for line := range bytes.Lines(ev) {
		line = bytes.TrimRight(line, "\r\n")
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data = append(data, bytes.TrimPrefix(v, []byte(" ")))
		}
	}
	return bytes.Join(data, []byte("\n"))
}
