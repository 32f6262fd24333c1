package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/agent"
)

// TestStrictBodies: a body encoding/json took — a name twice, a name in
// another case, a lone surrogate beside U+FFFD, invalid UTF-8, an unknown
// field, a second value — is refused with 400 on POST /v1/prompts and
// /v1/compact, and nothing is queued: the queue journal keeps its bytes,
// the log its last line, and the prompt's id stays unknown.
func TestStrictBodies(t *testing.T) {
	h := startBridge(t, t.TempDir(), agent.Echo{}, nil)
	h.prompt("known", "hi")
	h.until(0, 10*time.Second, hasType("result", "", 1))
	journal := filepath.Join(stateDir(h.home), queueName)
	// The journal records the prompt done after its result line: wait for
	// that, so the cases compare a journal at rest.
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(journal)
		return err == nil && strings.Contains(string(b), `{"op":"done","id":"known"}`)
	}, 10*time.Second, 10*time.Millisecond, "the first prompt is not recorded done")
	cases := []struct {
		name, path, id, body, msg string
	}{
		{"text twice", "/v1/prompts", "p1", `{"id":"p1","from":"user:x","text":"hi","text":"bye"}`, `field "text" appears more than once`},
		{"id twice", "/v1/prompts", "p2", `{"id":"p2","id":"p2b","from":"user:x","text":"hi"}`, `field "id" appears more than once`},
		{"Text", "/v1/prompts", "p3", `{"id":"p3","from":"user:x","Text":"hi"}`, `unknown field "Text"`},
		{"FROM", "/v1/prompts", "p4", `{"id":"p4","FROM":"user:operator","from":"user:x","text":"hi"}`, `unknown field "FROM"`},
		{"lone surrogate and U+FFFD", "/v1/prompts", "p5", `{"id":"p5","from":"user:x","text":"a\ud800 \ufffd"}`, `a \u escape that is not a character (a lone surrogate) in field "text"`},
		{"lone surrogate", "/v1/prompts", "p6", `{"id":"p6","from":"user:x","text":"a\udc00"}`, "lone surrogate"},
		{"invalid UTF-8", "/v1/prompts", "p7", "{\"id\":\"p7\",\"from\":\"user:x\",\"text\":\"caf\xe9\"}", "not valid UTF-8"},
		{"unknown field", "/v1/prompts", "p8", `{"id":"p8","from":"user:x","text":"hi","to":"arch"}`, `unknown field "to"`},
		{"two values", "/v1/prompts", "p9", `{"id":"p9","from":"user:x","text":"hi"} {"id":"p9b"}`, "more than one JSON value"},
		{"garbage after", "/v1/prompts", "p10", `{"id":"p10","from":"user:x","text":"hi"}]`, "after its JSON object"},
		{"not an object", "/v1/prompts", "p11", `["p11"]`, "not a JSON object"},
		{"compact id twice", "/v1/compact", "c1", `{"id":"c1","id":"c1"}`, `field "id" appears more than once`},
		{"compact ID", "/v1/compact", "c2", `{"ID":"c2"}`, `unknown field "ID"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before, err := os.ReadFile(journal)
			require.NoError(t, err)
			last := h.srv.log.Last()

			req, err := http.NewRequest("POST", h.ts.URL+c.path, strings.NewReader(c.body))
			require.NoError(t, err)
			req.Header.Set("Authorization", "Bearer "+testToken)
			resp, err := h.ts.Client().Do(req)
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			require.Equal(t, http.StatusBadRequest, resp.StatusCode, "body: %s", body)
			var eb bridge.ErrorBody
			require.NoError(t, json.Unmarshal(body, &eb))
			require.Contains(t, eb.Error, c.msg)
			require.NotContains(t, eb.Error, "user:", "an error quotes the body")

			after, err := os.ReadFile(journal)
			require.NoError(t, err)
			require.Equal(t, string(before), string(after), "a refused body reached the queue journal")
			require.Equal(t, last, h.srv.log.Last(), "a refused body added a line")
			_, err = h.client.PromptState(context.Background(), c.id)
			require.ErrorIs(t, err, bridge.ErrNotFound, "a refused prompt is known")
		})
	}
	st, err := h.client.Status(context.Background())
	require.NoError(t, err)
	require.Zero(t, st.Queue, "no refused prompt was queued")
}
