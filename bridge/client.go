package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DefaultTimeout bounds every call but a long-poll, which gets its wait on
// top of it.
const DefaultTimeout = 10 * time.Second

// TokenHeader carries the bare bearer token for callers whose
// Authorization header is taken: through the Kubernetes API server's pod
// proxy, Authorization authenticates the caller to the API server, which
// drops it before proxying. The bridge accepts either (docs/bridge.md).
const TokenHeader = "X-Sporectl-Bridge-Token"

// Client talks to one bridge.
type Client struct {
	base    *url.URL
	token   string
	http    *http.Client
	timeout time.Duration
}

// NewClient returns a client for the bridge at baseURL ("http://host:8080").
// hc may be nil for http.DefaultClient; the client adds its own per-call
// timeouts through the context, so hc needs none.
func NewClient(baseURL, token string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(strings.TrimSuffix(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("bridge address %q: want http://host:port", baseURL)
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	return &Client{base: u, token: token, http: hc, timeout: DefaultTimeout}, nil
}

// WithTimeout returns a copy of c with another per-call timeout.
func (c *Client) WithTimeout(d time.Duration) *Client {
	cc := *c
	cc.timeout = d
	return &cc
}

// APIError is a 4xx/5xx answer from the bridge.
type APIError struct {
	Status  int
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("bridge: %d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
}

// Is lets callers test errors.Is(err, ErrUnauthorized) and friends.
func (e *APIError) Is(target error) bool {
	t, ok := target.(*APIError)
	return ok && t.Message == "" && t.Status == e.Status
}

// Sentinel errors for the statuses callers act on.
var (
	ErrUnauthorized = &APIError{Status: http.StatusUnauthorized}
	ErrNotFound     = &APIError{Status: http.StatusNotFound}
	// ErrAhead: the caller asked for lines after a number the bridge never
	// reached — its log is not the one the caller read before.
	ErrAhead = &APIError{Status: http.StatusConflict}
)

// Health is GET /healthz: nil when the bridge serves and can append.
func (c *Client) Health(ctx context.Context) error {
	return c.do(ctx, c.timeout, http.MethodGet, "/healthz", nil, nil, nil, MaxAnswerBytes)
}

// Status is GET /v1/status.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var s Status
	err := c.do(ctx, c.timeout, http.MethodGet, "/v1/status", nil, nil, &s, MaxAnswerBytes)
	return s, err
}

// Prompt is POST /v1/prompts.
func (c *Client) Prompt(ctx context.Context, p PromptRequest) (PromptAccepted, error) {
	var a PromptAccepted
	err := c.do(ctx, c.timeout, http.MethodPost, "/v1/prompts", nil, p, &a, MaxAnswerBytes)
	return a, err
}

// PromptState is GET /v1/prompts/{id}.
func (c *Client) PromptState(ctx context.Context, id string) (PromptState, error) {
	var s PromptState
	err := c.do(ctx, c.timeout, http.MethodGet, "/v1/prompts/"+url.PathEscape(id), nil, nil, &s, MaxAnswerBytes)
	return s, err
}

// Events is GET /v1/events: up to limit lines after after (0 for the
// server's default), waiting up to wait for the first one.
func (c *Client) Events(ctx context.Context, after uint64, limit int, wait time.Duration) (Events, error) {
	q := url.Values{"after": {strconv.FormatUint(after, 10)}}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if wait > 0 {
		q.Set("wait", wait.String())
	}
	var e Events
	err := c.do(ctx, c.timeout+wait, http.MethodGet, "/v1/events", q, nil, &e, MaxEventsAnswerBytes)
	return e, err
}

// Compact is POST /v1/compact: queue /compact on the session.
func (c *Client) Compact(ctx context.Context) (PromptAccepted, error) {
	var a PromptAccepted
	err := c.do(ctx, c.timeout, http.MethodPost, "/v1/compact", nil, struct{}{}, &a, MaxAnswerBytes)
	return a, err
}

// Interrupt is POST /v1/interrupt: stop the running turn.
func (c *Client) Interrupt(ctx context.Context) error {
	return c.do(ctx, c.timeout, http.MethodPost, "/v1/interrupt", nil, struct{}{}, nil, MaxAnswerBytes)
}

// do makes one call. The answer's body is read up to limit bytes and no
// further (the route's bound, docs/bridge.md): a longer or malformed
// answer is a *BreachError, so a hostile bridge costs the caller at most
// limit bytes per call.
func (c *Client) do(ctx context.Context, timeout time.Duration, method, path string, q url.Values, in, out any, limit int64) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	u := *c.base
	u.Path += path
	u.RawQuery = q.Encode()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("bridge %s %s: encode request: %w", method, path, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return fmt.Errorf("bridge %s %s: %w", method, path, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("bridge %s %s: %w", method, path, scrub(err, c.token))
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		var eb ErrorBody
		b, _ := io.ReadAll(io.LimitReader(resp.Body, MaxAnswerBytes))
		if json.Unmarshal(b, &eb) != nil || eb.Error == "" {
			eb.Error = strings.TrimSpace(string(b))
		}
		return fmt.Errorf("bridge %s %s: %w", method, path, &APIError{Status: resp.StatusCode, Message: eb.Error})
	}
	if out == nil {
		// Drained for the connection's reuse, but only so far.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, limit))
		return nil
	}
	if err := decodeBounded(resp.Body, limit, method+" "+path, out); err != nil {
		var be *BreachError
		if errors.As(err, &be) {
			return be
		}
		return fmt.Errorf("bridge %s %s: read answer: %w", method, path, scrub(err, c.token))
	}
	return nil
}

// scrub keeps the token out of an error, should a transport ever echo a
// header back.
func scrub(err error, token string) error {
	if token == "" || !strings.Contains(err.Error(), token) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), token, "[token]"))
}
