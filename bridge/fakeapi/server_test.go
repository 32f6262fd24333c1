package fakeapi

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

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
