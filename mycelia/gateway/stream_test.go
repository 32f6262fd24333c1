package gateway

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// TestStreamCounter: the stream passes unchanged, however the upstream's
// bytes are cut, and each usage event is counted before it passes, with
// the call's usage so far; a text that names an event type is only text.
func TestStreamCounter(t *testing.T) {
	stream := "event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"m\",\"usage\":{\"input_tokens\":10,\"cache_read_input_tokens\":4,\"output_tokens\":1}}}\r\n\r\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"a message_delta here\"}}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\n" + "data: \"usage\":{\"output_tokens\":7}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}"
	for name, r := range map[string]func() io.Reader{
		"whole":        func() io.Reader { return strings.NewReader(stream) },
		"byte by byte": func() io.Reader { return iotest.OneByteReader(strings.NewReader(stream)) },
		"with its end": func() io.Reader { return iotest.DataErrReader(strings.NewReader(stream)) },
	} {
		t.Run(name, func(t *testing.T) {
			var counted []state.Usage
			var passed strings.Builder
			s := &streamCounter{body: io.NopCloser(r()), count: func(m *message) error {
				require.Equal(t, "msg_1", m.id)
				// Counted before the event passed: nothing of it yet.
				require.NotContains(t, passed.String(), `"type":"`+map[int]string{0: "message_start", 1: "message_delta"}[len(counted)]+`"`)
				counted = append(counted, m.usage)
				return nil
			}}
			buf := make([]byte, 7)
			for {
				n, err := s.Read(buf)
				passed.Write(buf[:n])
				if err == io.EOF {
					break
				}
				require.NoError(t, err)
			}
			require.Equal(t, stream, passed.String())
			require.Equal(t, []state.Usage{
				{InputTokens: 10, CacheReadTokens: 4, OutputTokens: 1},
				{InputTokens: 10, CacheReadTokens: 4, OutputTokens: 7},
			}, counted)
		})
	}
}

// TestStreamCounterRefuses: usage before a message_start, a count that
// fails, and an event too large to count each end the stream there.
func TestStreamCounterRefuses(t *testing.T) {
	read := func(stream string, count func(*message) error) (string, error) {
		s := &streamCounter{body: io.NopCloser(strings.NewReader(stream)), count: count}
		b, err := io.ReadAll(s)
		return string(b), err
	}
	ok := func(*message) error { return nil }
	out, err := read("data: {\"type\":\"ping\"}\n\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":1}}\n\n", ok)
	require.ErrorContains(t, err, "before its message_start")
	require.Equal(t, "data: {\"type\":\"ping\"}\n\n", out)

	out, err = read("data: {\"type\":\"message_start\",\"message\":{\"id\":\"m\"}}\n\nrest", func(*message) error { return io.ErrUnexpectedEOF })
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	require.Empty(t, out)

	_, err = read("data: "+strings.Repeat("x", maxEvent+1), ok)
	require.ErrorContains(t, err, "over")
}
