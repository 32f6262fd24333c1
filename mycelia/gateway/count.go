package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/sporectl/sporectl/state"
)

// The count (docs/gateway.md "Counting"): a call's usage is what the
// upstream's answer says, counted into the spore's record before the
// part of the answer that says it is passed on. A streamed answer says
// it in its message_start event (the input, and the output so far) and
// its message_delta events (the output so far, which only grows); a
// whole answer in its usage. Each count is state.CountModelCall under
// the answer's message id, which adds only what that id has beyond what
// it counted, so a count made twice (a retried event, another replica)
// adds nothing. A count that fails cuts the answer: a spore is never
// handed usage that is not counted.

// errNotCounted marks an answer that could not be counted, and so is not
// passed on.
var errNotCounted = errors.New("not counted")

// countAnswer is the proxy's ModifyResponse: a successful answer of
// POST /v1/messages is counted as it passes (streamed) or before it does
// (whole); any other answer passes as it is.
func (g *Gateway) countAnswer(resp *http.Response) error {
	c := callOf(resp.Request.Context())
	g.cfg.Metrics.ModelUpstream(time.Since(c.sent))
	if resp.StatusCode != http.StatusOK || !strings.HasSuffix(resp.Request.URL.Path, "/v1/messages") {
		return nil
	}
	ctx := resp.Request.Context()
	if mediaType(resp.Header.Get("Content-Type")) == "text/event-stream" {
		resp.Body = &streamCounter{body: resp.Body, count: func(m *message) error { return g.count(ctx, c, m) }}
		return nil
	}
	if err := g.countWhole(ctx, c, resp); err != nil {
		return fmt.Errorf("%w: %w", errNotCounted, err)
	}
	return nil
}

// countWhole counts a whole answer, read (at most MaxAnswer) before any
// of it is passed on.
func (g *Gateway) countWhole(ctx context.Context, c *call, resp *http.Response) error {
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswer+1))
	resp.Body.Close()
	if err != nil {
		return fmt.Errorf("read the model's answer: %w", err)
	}
	if len(body) > MaxAnswer {
		return fmt.Errorf("the model's answer is over %d bytes: it cannot be counted", MaxAnswer)
	}
	var m wireMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return fmt.Errorf("read the model's answer to count it: %w", err)
	}
	msg := &message{id: m.ID, model: m.Model}
	mergeUsage(&msg.usage, m.Usage)
	if err := g.count(ctx, c, msg); err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return nil
}

// message is what the gateway knows of the call's answer so far.
type message struct {
	id, model string
	usage     state.Usage
}

// count counts m (the call's usage so far) in one store transaction. It
// runs on even when the spore has left (the upstream spent it anyway),
// bounded by countTimeout.
func (g *Gateway) count(ctx context.Context, c *call, m *message) error {
	if m.id == "" {
		return errors.New("the model's answer names no message id: it cannot be counted")
	}
	u := m.usage
	u.CostMicros = costMicros(m.model, u)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), countTimeout)
	defer cancel()
	now := g.cfg.Now()
	var added state.Usage
	err := g.cfg.Store.Update(ctx, func(tx state.Tx) error {
		var err error
		added, err = state.CountModelCall(ctx, tx, c.spore, m.id, u, now)
		return err
	})
	if err != nil {
		// The error names the spore and the call, nothing secret.
		g.cfg.Logger.Error("model gateway: could not count a model call; its answer is cut", "spore", c.spore, "err", err)
		return fmt.Errorf("count the model call: %w", err)
	}
	g.cfg.Logger.Debug("model gateway: counted", "spore", c.spore, "call", m.id, "model", m.model, "added_tokens", added.Spend().Tokens)
	if !added.IsZero() {
		g.cfg.Metrics.ModelTokens(c.colony, added)
	}
	return nil
}

// wireMessage is the part of a whole answer (or of message_start's
// message) the count reads.
type wireMessage struct {
	ID    string    `json:"id"`
	Model string    `json:"model"`
	Usage wireUsage `json:"usage"`
}

// wireUsage is the Messages API's usage; a field left out is not known
// yet (message_delta names only what changed).
type wireUsage struct {
	InputTokens              *int64 `json:"input_tokens"`
	OutputTokens             *int64 `json:"output_tokens"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens"`
}

// mergeUsage takes the counts w names (each the call's so far) into u,
// keeping the ones it does not name; a negative count is none.
func mergeUsage(u *state.Usage, w wireUsage) {
	set := func(dst *int64, v *int64) {
		if v != nil {
			*dst = max(*v, 0)
		}
	}
	set(&u.InputTokens, w.InputTokens)
	set(&u.OutputTokens, w.OutputTokens)
	set(&u.CacheCreationTokens, w.CacheCreationInputTokens)
	set(&u.CacheReadTokens, w.CacheReadInputTokens)
}

func mediaType(ct string) string {
	t, _, _ := strings.Cut(ct, ";")
	return strings.ToLower(strings.TrimSpace(t))
}
