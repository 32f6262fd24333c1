package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// hostile serves body on every route and counts the bytes the client
// took of it.
func hostile(t *testing.T, body func(w http.ResponseWriter) int64) (*Client, *atomic.Int64) {
	t.Helper()
	var sent atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		sent.Add(body(w))
	}))
	t.Cleanup(ts.Close)
	c, err := NewClient(ts.URL, "tok", ts.Client())
	require.NoError(t, err)
	return c, &sent
}

// TestClientReadsNoMoreThanTheRoutesBound: a bridge answering a 40 MB
// line is refused once the client has read the route's bound, with a
// BreachError, not read whole.
func TestClientReadsNoMoreThanTheRoutesBound(t *testing.T) {
	const lineBytes = 40 << 20
	c, sent := hostile(t, func(w http.ResponseWriter) int64 {
		n, _ := fmt.Fprint(w, `{"events":[{"seq":1,"at":"2026-01-01T00:00:00Z","line":"`)
		chunk := []byte(strings.Repeat("x", 64<<10))
		total := int64(n)
		for i := 0; i < lineBytes/len(chunk); i++ {
			m, err := w.Write(chunk)
			total += int64(m)
			if err != nil {
				return total // the client hung up: what it took is less
			}
		}
		m, _ := fmt.Fprint(w, `"}],"last_seq":1}`)
		return total + int64(m)
	})
	_, err := c.Events(context.Background(), 0, MaxLimit, 0)
	var be *BreachError
	require.ErrorAs(t, err, &be)
	require.Contains(t, be.What, fmt.Sprintf("longer than %d bytes", MaxEventsAnswerBytes))
	require.Equal(t, "GET /v1/events", be.Route)
	// The server may have written into socket buffers ahead of the
	// client; it cannot have written the whole line.
	require.Less(t, sent.Load(), int64(lineBytes/2), "the client read the hostile line whole")

	c, _ = hostile(t, func(w http.ResponseWriter) int64 {
		n, _ := fmt.Fprintf(w, `{"state":"idle","session_id":"%s"}`, strings.Repeat("s", MaxAnswerBytes))
		return int64(n)
	})
	_, err = c.Status(context.Background())
	require.ErrorAs(t, err, &be)
	require.Equal(t, "GET /v1/status", be.Route)
}

// TestClientCallsAnswerThatIsNotJSONABreach: before, a body that is not
// JSON was a decode error like a cut connection ("ingest failed", -v
// only).
func TestClientCallsAnswerThatIsNotJSONABreach(t *testing.T) {
	for name, body := range map[string]string{
		"not JSON":     `{"events":[{"seq":1,"line":not json}],"last_seq":1}`,
		"wrong type":   `{"events":[{"seq":"one","line":{}}],"last_seq":1}`,
		"plain text":   "hello\n",
		"negative seq": `{"events":[{"seq":-1,"line":{}}],"last_seq":1}`,
	} {
		c, _ := hostile(t, func(w http.ResponseWriter) int64 {
			n, _ := fmt.Fprint(w, body)
			return int64(n)
		})
		_, err := c.Events(context.Background(), 0, 10, 0)
		var be *BreachError
		require.ErrorAs(t, err, &be, name)
	}
}

func TestCheckPage(t *testing.T) {
	ev := func(seq uint64, line string) Event { return Event{Seq: seq, Line: json.RawMessage(line)} }
	big := `"` + strings.Repeat("x", MaxLineBytes) + `"`
	for _, tc := range []struct {
		name   string
		page   Events
		after  uint64
		limit  int
		breach string
	}{
		{name: "ok", page: Events{Events: []Event{ev(4, `{}`), ev(5, `"text"`)}, LastSeq: 9}, after: 3, limit: 2},
		{name: "a gap is not the page's breach", page: Events{Events: []Event{ev(4, `{}`), ev(7, `{}`)}, LastSeq: 7}, after: 3, limit: 2},
		{name: "more than asked", page: Events{Events: []Event{ev(4, `{}`), ev(5, `{}`), ev(6, `{}`)}, LastSeq: 6}, after: 3, limit: 2, breach: "3 events where at most 2"},
		{name: "more than the default", page: Events{Events: make([]Event, DefaultLimit+1)}, breach: "where at most 500"},
		{name: "backward", page: Events{Events: []Event{ev(5, `{}`), ev(4, `{}`)}, LastSeq: 5}, after: 3, limit: 9, breach: "line 4 after line 5"},
		{name: "repeat", page: Events{Events: []Event{ev(4, `{}`), ev(4, `{}`)}, LastSeq: 5}, after: 3, limit: 9, breach: "line 4 after line 4"},
		{name: "not after after", page: Events{Events: []Event{ev(3, `{}`)}, LastSeq: 5}, after: 3, limit: 9, breach: "line 3 after line 3"},
		{name: "line over the bound", page: Events{Events: []Event{ev(1, big)}, LastSeq: 1}, limit: 9, breach: "over the 1048576-byte bound of a line"},
		{name: "last_seq below its lines", page: Events{Events: []Event{ev(1, `{}`), ev(2, `{}`)}, LastSeq: 1}, limit: 9, breach: "last_seq 1 below its own line 2"},
		{name: "empty line", page: Events{Events: []Event{ev(1, ``)}, LastSeq: 1}, limit: 9, breach: "not JSON"},
	} {
		err := CheckPage(tc.page, tc.after, tc.limit)
		if tc.breach == "" {
			require.NoError(t, err, tc.name)
			continue
		}
		var be *BreachError
		require.True(t, errors.As(err, &be), tc.name)
		require.Contains(t, be.What, tc.breach, tc.name)
	}
}

func TestCheckStatus(t *testing.T) {
	require.NoError(t, CheckStatus(Status{State: StateIdle}))
	err := CheckStatus(Status{State: "idle\x1b[2J\u202e"})
	var be *BreachError
	require.ErrorAs(t, err, &be)
	require.NotContains(t, err.Error(), "\x1b", "the breach never repeats the bridge's text")
	require.NotContains(t, err.Error(), "\u202e")
}
