package kube_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sporectl/sporectl/bridge/fakeapi"
	"github.com/sporectl/sporectl/state"
)

// upstreamCall is what the model's API saw of one call and what it
// answered: who presented which key, and the usage of the message it
// answered (its own counts, as a real API reports them).
type upstreamCall struct {
	Method, Path  string
	Start         time.Time // when it arrived
	Remote        string    // the caller's address, host only
	APIKey        string    // x-api-key as received
	Authorization string
	Prompt        string // the request's last user text (fakeapi.Request.Prompt)
	Status        int
	MsgID         string      // the answered message's id; "" for an error or count_tokens
	Usage         state.Usage // its final usage (no cost: the gateway prices it)
}

// upstream stands in front of the fake Messages API as the model's API
// the gateway forwards to, and records every call and its answer. It
// refuses, as the real API would, a call without the operator's key.
type upstream struct {
	key  string
	next http.Handler

	mu    sync.Mutex
	calls []upstreamCall
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host, _, _ := strings.Cut(r.RemoteAddr, ":")
	c := upstreamCall{Start: time.Now(), Method: r.Method, Path: r.URL.Path, Remote: host,
		APIKey: r.Header.Get("x-api-key"), Authorization: r.Header.Get("Authorization")}
	if body, err := io.ReadAll(r.Body); err == nil {
		var req fakeapi.Request
		if json.Unmarshal(body, &req) == nil {
			c.Prompt, _ = req.Prompt()
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	tee := &teeWriter{ResponseWriter: w, status: http.StatusOK}
	if c.APIKey != u.key {
		tee.Header().Set("Content-Type", "application/json")
		tee.WriteHeader(http.StatusUnauthorized)
		_, _ = tee.Write([]byte(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`))
	} else {
		u.next.ServeHTTP(tee, r)
	}
	c.Status = tee.status
	if c.Status == http.StatusOK && strings.HasSuffix(r.URL.Path, "/v1/messages") {
		c.MsgID, c.Usage = answeredUsage(tee.Header().Get("Content-Type"), tee.body.Bytes())
	}
	u.mu.Lock()
	u.calls = append(u.calls, c)
	u.mu.Unlock()
}

// Calls is every call so far.
func (u *upstream) Calls() []upstreamCall {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]upstreamCall(nil), u.calls...)
}

// teeWriter passes an answer on as it is written (streams flushed event
// by event) and keeps a copy.
type teeWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (t *teeWriter) WriteHeader(code int) {
	t.status = code
	t.ResponseWriter.WriteHeader(code)
}

func (t *teeWriter) Write(b []byte) (int, error) {
	t.body.Write(b)
	return t.ResponseWriter.Write(b)
}

func (t *teeWriter) Flush() {
	if f, ok := t.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// usageFields are the Messages API's usage counts; a field a
// message_delta leaves out keeps its value.
type usageFields struct {
	Input         *int64 `json:"input_tokens"`
	Output        *int64 `json:"output_tokens"`
	CacheCreation *int64 `json:"cache_creation_input_tokens"`
	CacheRead     *int64 `json:"cache_read_input_tokens"`
}

func (f usageFields) onto(u *state.Usage) {
	for _, p := range []struct {
		from *int64
		to   *int64
	}{{f.Input, &u.InputTokens}, {f.Output, &u.OutputTokens}, {f.CacheCreation, &u.CacheCreationTokens}, {f.CacheRead, &u.CacheReadTokens}} {
		if p.from != nil {
			*p.to = *p.from
		}
	}
}

// answeredUsage reads a message's id and final usage from an answer:
// a whole message, or a stream's message_start and message_deltas.
func answeredUsage(contentType string, body []byte) (string, state.Usage) {
	var u state.Usage
	if !strings.HasPrefix(contentType, "text/event-stream") {
		var m struct {
			ID    string      `json:"id"`
			Usage usageFields `json:"usage"`
		}
		if json.Unmarshal(body, &m) != nil {
			return "", u
		}
		m.Usage.onto(&u)
		return m.ID, u
	}
	var id string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type    string `json:"type"`
			Message struct {
				ID    string      `json:"id"`
				Usage usageFields `json:"usage"`
			} `json:"message"`
			Usage usageFields `json:"usage"`
		}
		if json.Unmarshal([]byte(data), &ev) != nil {
			continue
		}
		switch ev.Type {
		case "message_start":
			id = ev.Message.ID
			ev.Message.Usage.onto(&u)
		case "message_delta":
			ev.Usage.onto(&u)
		}
	}
	return id, u
}
