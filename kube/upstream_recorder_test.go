package kube_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge/fakeapi"
	"github.com/sporectl/sporectl/state"
)

// The real-node gateway test judges the gateway's count against what the
// upstream recorder read of the fake's answers: the recorder must read a
// stream's and a whole answer's usage as the fake wrote them, and let no
// call without the key reach the fake.
func TestUpstreamRecorderReadsTheAnsweredUsage(t *testing.T) {
	api := fakeapi.New()
	api.Script(fakeapi.Rule{Match: "hello", Steps: []fakeapi.Reply{fakeapi.Text("twelve chars")}})
	up := &upstream{key: "k1", next: api}
	srv := httptest.NewServer(up)
	t.Cleanup(srv.Close)

	call := func(key string, stream bool) int {
		body := `{"model":"claude-fake-1","max_tokens":16,"stream":` + map[bool]string{true: "true", false: "false"}[stream] +
			`,"messages":[{"role":"user","content":"hello"}]}`
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL+"/v1/messages", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("x-api-key", key)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(t, err)
		return resp.StatusCode
	}
	require.Equal(t, http.StatusOK, call("k1", true))
	require.Equal(t, http.StatusOK, call("k1", false))
	require.Equal(t, http.StatusUnauthorized, call("another", false))

	calls := up.Calls()
	require.Len(t, calls, 3)
	want := state.Usage{InputTokens: 100, OutputTokens: len64("twelve chars")/4 + 1}
	for i, c := range calls[:2] {
		assert.NotEmpty(t, c.MsgID, "call %d", i)
		assert.Equal(t, want, c.Usage, "call %d", i)
		assert.Equal(t, "hello", c.Prompt, "call %d", i)
	}
	assert.NotEqual(t, calls[0].MsgID, calls[1].MsgID)
	assert.Empty(t, calls[2].MsgID)
	assert.Len(t, api.Requests(), 2, "the call without the key never reached the model")
}

func len64(s string) int64 { return int64(len(s)) }
