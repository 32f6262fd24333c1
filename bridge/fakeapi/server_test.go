package fakeapi

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	resp, err := http.Post(url+"/v1/messages", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// sseTypes returns the event names of a streamed reply, and the joined
// text and tool input deltas.
func sseTypes(t *testing.T, resp *http.Response) (events []string, text, input string) {
	t.Helper()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if ev, ok := strings.CutPrefix(line, "event: "); ok {
			events = append(events, ev)
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var d struct {
				Delta struct {
					Text        string `json:"text"`
					PartialJSON string `json:"partial_json"`
				} `json:"delta"`
			}
			require.NoError(t, json.Unmarshal([]byte(data), &d))
			text += d.Delta.Text
			input += d.Delta.PartialJSON
		}
	}
	return events, text, input
}

func TestScriptedConversation(t *testing.T) {
	s := New()
	s.Script(Rule{Match: "write", Steps: []Reply{Write("/h/f.txt", "héllo"), Text("wrote it")}})
	ts := s.Start()
	defer ts.Close()

	first := `{"model":"m","stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"please write"}]}]}`
	resp := post(t, ts.URL, first)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	events, _, input := sseTypes(t, resp)
	require.Equal(t, []string{"message_start", "content_block_start", "content_block_delta", "content_block_delta",
		"content_block_stop", "message_delta", "message_stop"}, events)
	require.JSONEq(t, `{"file_path":"/h/f.txt","content":"héllo"}`, input)

	second := `{"stream":true,"messages":[{"role":"user","content":"please write"},
		{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"Write","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}]}`
	_, text, _ := sseTypes(t, post(t, ts.URL, second))
	require.Equal(t, "wrote it", text, "the step after a tool result")

	other := `{"stream":true,"messages":[{"role":"user","content":"something else"}]}`
	_, text, _ = sseTypes(t, post(t, ts.URL, other))
	require.Equal(t, "ok", text, "unscripted prompts get the fallback")
	require.Len(t, s.Requests(), 3)
	require.True(t, s.Requests()[1].Contains("tool_result"))
}

func TestErrorsAndNonStreaming(t *testing.T) {
	s := New()
	s.Script(Rule{Match: "fail", Steps: []Reply{Error(529)}})
	ts := s.Start()
	defer ts.Close()

	resp := post(t, ts.URL, `{"messages":[{"role":"user","content":"fail now"}]}`)
	require.Equal(t, 529, resp.StatusCode)
	var e struct{ Type string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&e))
	require.Equal(t, "error", e.Type)

	resp = post(t, ts.URL, `{"messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, 200, resp.StatusCode)
	var m struct {
		Type    string
		Content []struct{ Text string }
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
	require.Equal(t, "message", m.Type)
	require.Equal(t, "ok", m.Content[0].Text)
}

// TestAnswersAreRecordedAsFarAsTheyWent: the fake's own account of what
// it sent, which gateway tests compare with what was counted: a scripted
// usage in message_start and message_delta, a whole stream marked whole,
// a stream whose client left during a pause marked started and not whole,
// a whole answer, and the key each came with.
func TestAnswersAreRecordedAsFarAsTheyWent(t *testing.T) {
	s := New()
	s.Script(
		Rule{Match: "spend", Steps: []Reply{Text("spent").Spending(Usage{Input: 7, Output: 3, CacheCreation: 5, CacheRead: 11})}},
		Rule{Match: "slow", Steps: []Reply{Text("a slow answer").Streaming(time.Hour)}},
	)
	ts := s.Start()
	defer ts.Close()

	req, err := http.NewRequest(http.MethodPost, ts.URL+"/v1/messages", strings.NewReader(`{"stream":true,"messages":[{"role":"user","content":"spend"}]}`))
	require.NoError(t, err)
	req.Header.Set("x-api-key", "k1")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Contains(t, string(body), `"cache_creation_input_tokens":5,"cache_read_input_tokens":11,"input_tokens":7,"output_tokens":1}`)
	require.Contains(t, string(body), `"usage":{"output_tokens":3}`)

	ctx, cancel := context.WithCancel(context.Background())
	req, err = http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v1/messages", strings.NewReader(`{"stream":true,"messages":[{"role":"user","content":"slow"}]}`))
	require.NoError(t, err)
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "event: message_start\n", line)
	require.Eventually(t, func() bool { return len(s.InFlight()) == 1 && !s.InFlight()[0].Started.IsZero() }, 5*time.Second, 5*time.Millisecond)
	cancel()
	resp.Body.Close()
	require.Eventually(t, func() bool { return len(s.InFlight()) == 0 }, 5*time.Second, 5*time.Millisecond, "the answer ends with its client")

	post(t, ts.URL, `{"messages":[{"role":"user","content":"whole"}]}`)
	// The fake records a write once it has flushed it, which the client
	// may see first: the record is read once the answer has ended.
	require.Eventually(t, func() bool { return len(s.InFlight()) == 0 }, 5*time.Second, 5*time.Millisecond, "the whole answer ends")
	got := s.Answered()
	require.Len(t, got, 3)
	require.Equal(t, Answer{ID: "msg_fake_000001", Prompt: "spend", Stream: true, APIKey: "k1", Usage: Usage{Input: 7, Output: 3, CacheCreation: 5, CacheRead: 11}},
		Answer{ID: got[0].ID, Prompt: got[0].Prompt, Stream: got[0].Stream, APIKey: got[0].APIKey, Usage: got[0].Usage})
	require.True(t, got[0].Whole())
	require.Equal(t, "slow", got[1].Prompt)
	require.False(t, got[1].Started.IsZero(), "message_start went out")
	require.False(t, got[1].Whole(), "the client left before message_delta")
	require.Equal(t, Usage{Input: 100, Output: len("a slow answer")/4 + 1}, got[1].Usage, "the default usage")
	require.False(t, got[2].Stream)
	require.True(t, got[2].Whole())
}
