package eventlog

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRecordRoundTrip(t *testing.T) {
	r := Record{Seq: 42, At: time.Date(2026, 11, 29, 1, 2, 3, 400, time.UTC), Line: json.RawMessage(`{"type":"result"}`)}
	b := appendRecord(nil, r)
	require.Equal(t, byte('\n'), b[len(b)-1])
	got, err := ParseRecord(b)
	require.NoError(t, err)
	require.Equal(t, r.Seq, got.Seq)
	require.True(t, r.At.Equal(got.At))
	require.Equal(t, string(r.Line), string(got.Line))

	b[len(b)-3] = 'X' // scribble inside the line
	_, err = ParseRecord(b)
	require.ErrorIs(t, err, ErrBadRecord)
}

// FuzzParseRecord: arbitrary bytes never panic the parser, and whatever
// it accepts encodes back to a record it accepts with the same content.
func FuzzParseRecord(f *testing.F) {
	f.Add(appendRecord(nil, Record{Seq: 1, At: time.Unix(0, 0), Line: json.RawMessage(`{}`)}))
	f.Add([]byte("1 2026-01-01T00:00:00Z 00000000 {}\n"))
	f.Add([]byte("0 x y z"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseRecord(b)
		if err != nil {
			return
		}
		again, err := ParseRecord(appendRecord(nil, r))
		if err != nil {
			t.Fatalf("re-encoded record does not parse: %v", err)
		}
		if again.Seq != r.Seq || !again.At.Equal(r.At) || string(again.Line) != string(r.Line) {
			t.Fatalf("round trip changed %+v to %+v", r, again)
		}
	})
}
