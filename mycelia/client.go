package mycelia

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/sporectl/sporectl/bridge/sporeenv"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// TokenFile is where, under $HOME, the local runtime writes a spore's
// token; read when sporeenv.APIToken is not set.
const TokenFile = ".sporectl-bridge/api-token"

// DefaultRetryFor is how long a client keeps retrying a request that
// could not reach serve or that serve could not answer (502, 503, 504):
// long enough for a serve replica to be restarted.
const DefaultRetryFor = time.Minute

// Config is what a client needs.
type Config struct {
	URL   string
	Spore string
	Token string
	// HTTP may be nil for a client with sane timeouts.
	HTTP *http.Client
	// RetryFor bounds retries (DefaultRetryFor when zero; negative: none).
	RetryFor time.Duration
}

// ConfigError is a client environment that is missing or wrong.
type ConfigError struct{ Msg string }

func (e *ConfigError) Error() string { return e.Msg }

// ConfigFromEnv reads sporeenv.APIURL, sporeenv.SporeID and the token (sporeenv.APIToken, else
// $HOME/TokenFile).
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	cfg := Config{URL: getenv(sporeenv.APIURL), Spore: getenv(sporeenv.SporeID), Token: strings.TrimSpace(getenv(sporeenv.APIToken))}
	if cfg.URL == "" {
		return Config{}, &ConfigError{Msg: sporeenv.APIURL + " is not set: it is the address of `sporectl serve`, e.g. http://127.0.0.1:7070"}
	}
	if cfg.Spore == "" {
		return Config{}, &ConfigError{Msg: sporeenv.SporeID + " is not set: it is this spore's id"}
	}
	if err := state.ValidateID(cfg.Spore); err != nil {
		return Config{}, &ConfigError{Msg: sporeenv.SporeID + ": " + err.Error()}
	}
	if cfg.Token == "" {
		home := getenv("HOME")
		if home == "" {
			return Config{}, &ConfigError{Msg: "no API token: " + sporeenv.APIToken + " is not set and neither is $HOME (to read $HOME/" + TokenFile + ")"}
		}
		path := filepath.Join(home, filepath.FromSlash(TokenFile))
		b, err := os.ReadFile(path)
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return Config{}, &ConfigError{Msg: fmt.Sprintf("no API token: %s is not set and %s cannot be read: %v", sporeenv.APIToken, path, err)}
		}
		cfg.Token = strings.TrimSpace(string(b))
		if cfg.Token == "" {
			return Config{}, &ConfigError{Msg: "no API token: " + path + " is empty"}
		}
	}
	return cfg, nil
}

// Client calls serve as one spore.
type Client struct {
	base     *url.URL
	spore    string
	token    string
	http     *http.Client
	retryFor time.Duration
	// sleep waits between retries (tests shorten it).
	sleep func(ctx context.Context, d time.Duration) error
}

// NewClient checks cfg and returns a client; it dials nothing.
func NewClient(cfg Config) (*Client, error) {
	u, err := url.Parse(strings.TrimSuffix(cfg.URL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" {
		return nil, &ConfigError{Msg: fmt.Sprintf("%s %q: want http(s)://host:port", sporeenv.APIURL, redactURL(cfg.URL))}
	}
	if cfg.Token == "" || strings.ContainsAny(cfg.Token, " \t\r\n") {
		return nil, &ConfigError{Msg: "the API token is empty or holds white space"}
	}
	hc := cfg.HTTP
	if hc == nil {
		// No redirects: an answer is serve's own, never another host's.
		hc = &http.Client{Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	rf := cfg.RetryFor
	if rf == 0 {
		rf = DefaultRetryFor
	}
	return &Client{base: u, spore: cfg.Spore, token: cfg.Token, http: hc, retryFor: rf, sleep: sleepCtx}, nil
}

// UnreachableError: serve could not be reached, or kept answering 502,
// 503 or 504, until the retries ran out.
type UnreachableError struct {
	URL string
	Err error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("sporectl serve at %s could not be reached: %v", e.URL, e.Err)
}
func (e *UnreachableError) Unwrap() error { return e.Err }

// Ask summons the mycologist one rank up.
func (c *Client) Ask(ctx context.Context, text string) (SendResponse, error) {
	return callRoute[SendResponse](ctx, c, RouteSummons, nil, AskRequest{Text: text})
}

// Tell sends a message to a spore in reach; force skips the address
// check.
func (c *Client) Tell(ctx context.Context, id, text string, wake, force bool) (SendResponse, error) {
	return callRoute[SendResponse](ctx, c, RouteTell, nil, TellRequest{Text: text, Wake: wake, Force: force}, id)
}

// windowQuery is ?window=D, or nothing for the server's default.
func windowQuery(d time.Duration) url.Values {
	if d <= 0 {
		return nil
	}
	return url.Values{"window": {d.String()}}
}

// Collisions lists files edited by several spores in reach in the
// window (0: the server's default).
func (c *Client) Collisions(ctx context.Context, window time.Duration) (CollisionList, error) {
	return callRoute[CollisionList](ctx, c, RouteCollisions, windowQuery(window), nil)
}

// Deploys lists pushes and deploys of spores in reach in the window.
func (c *Client) Deploys(ctx context.Context, window time.Duration) (DeployList, error) {
	return callRoute[DeployList](ctx, c, RouteDeploys, windowQuery(window), nil)
}

// Report records that this spore pushed or deployed (kind), or failed to.
func (c *Client) Report(ctx context.Context, kind string, failed bool, text string) (ReportResponse, error) {
	return callRoute[ReportResponse](ctx, c, RouteReport, nil, ReportRequest{Kind: kind, Failed: failed, Text: text})
}

// Spores lists the spores in reach.
func (c *Client) Spores(ctx context.Context) (SporeList, error) {
	return callRoute[SporeList](ctx, c, RouteSpores, nil, nil)
}

// Spore reads one spore's last turns (0: the server's default).
func (c *Client) Spore(ctx context.Context, id string, turns int) (SporeTurns, error) {
	var q url.Values
	if turns > 0 {
		q = url.Values{"turns": {strconv.Itoa(turns)}}
	}
	return callRoute[SporeTurns](ctx, c, RouteSpore, q, nil, id)
}

// Hosts lists sporectl's own pods or processes ([arch] only).
func (c *Client) Hosts(ctx context.Context) (reconcile.HostList, error) {
	return callRoute[reconcile.HostList](ctx, c, RouteHosts, nil, nil)
}

// HostLogs reads the last tail lines (0: the server's default) of the
// runtime log of host name (a host's name or its spore id). The name is
// one path segment: it holds no '/'.
func (c *Client) HostLogs(ctx context.Context, name string, tail int) (HostLogs, error) {
	var q url.Values
	if tail > 0 {
		q = url.Values{"tail": {strconv.Itoa(tail)}}
	}
	return callRoute[HostLogs](ctx, c, RouteHostLogs, q, nil, name)
}

// SwarmTell sends a message to the teammate with role.
func (c *Client) SwarmTell(ctx context.Context, role, text string) (SendResponse, error) {
	return callRoute[SendResponse](ctx, c, RouteSwarmTell, nil, SwarmTellRequest{Role: role, Text: text})
}

// SwarmLoop starts, changes (every) or ends (stop) the caller's loop.
func (c *Client) SwarmLoop(ctx context.Context, every string, stop bool) (LoopResponse, error) {
	return callRoute[LoopResponse](ctx, c, RouteSwarmLoop, nil, LoopRequest{Every: every, Stop: stop})
}

// SwarmCompact compacts the context of the teammate with role.
func (c *Client) SwarmCompact(ctx context.Context, role string) (CompactResponse, error) {
	return callRoute[CompactResponse](ctx, c, RouteSwarmCompact, nil, CompactRequest{Role: role})
}

// callRoute sends rt's request, its wildcard set to args, and reads its answer
// as Out. The body and the answer must be of rt's types: a client method
// and its row cannot disagree unnoticed.
func callRoute[Out any](ctx context.Context, c *Client, rt *Route, q url.Values, in any, args ...string) (Out, error) {
	var out Out
	if reflect.TypeOf(in) != reflect.TypeOf(rt.Request) || reflect.TypeOf(out) != reflect.TypeOf(rt.Response) {
		return out, fmt.Errorf("%s %s: the client sends %T and reads %T, the route takes %T and answers %T", rt.Method, rt.Pattern, in, out, rt.Request, rt.Response)
	}
	if rt.wildcard != "" && (len(args) != 1 || args[0] == "" || strings.Contains(args[0], "/")) {
		return out, fmt.Errorf("%s %s: {%s} must be one path segment", rt.Method, rt.Pattern, rt.wildcard)
	}
	err := c.do(ctx, rt.Method, routeURL(*c.base, rt, q, args...), in, &out)
	return out, err
}

// do sends one request, retrying with the same request id while serve
// cannot be reached or cannot answer: a message is recorded once however
// often it is sent (docs/mycologists.md "Retries and idempotency").
func (c *Client) do(ctx context.Context, method, u string, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("encode the request: %w", err)
		}
	}
	reqID := newRequestID()
	deadline := time.Now().Add(c.retryFor)
	wait := 100 * time.Millisecond
	for {
		retry, err := c.once(ctx, method, u, reqID, body, out)
		if err == nil || !retry || ctx.Err() != nil || !time.Now().Before(deadline) {
			if err != nil && retry && ctx.Err() == nil {
				var ae *Error
				if !errors.As(err, &ae) {
					err = &UnreachableError{URL: redactURL(c.base.String()), Err: err}
				}
			}
			return err
		}
		if err := c.sleep(ctx, min(wait, time.Until(deadline))); err != nil {
			return err
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// once is one attempt; retry says whether another may succeed.
func (c *Client) once(ctx context.Context, method, u, reqID string, body []byte, out any) (retry bool, err error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return false, fmt.Errorf("%s %s: %w", method, redactURL(u), err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set(HeaderSpore, c.spore)
	req.Header.Set(HeaderRequestID, reqID)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return true, scrubToken(err, c.token)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4*MaxTurnsText))
	if err != nil {
		// The answer was lost on the way: the request may have been
		// taken; a retry with the same id is recognised.
		return true, scrubToken(err, c.token)
	}
	if resp.StatusCode >= 400 {
		e := &Error{Status: resp.StatusCode}
		if json.Unmarshal(b, e) != nil || e.Message == "" {
			e.Message = strings.TrimSpace(string(b[:min(len(b), 512)]))
			if e.Message == "" {
				e.Message = http.StatusText(resp.StatusCode)
			}
		}
		e.Message = strings.ReplaceAll(e.Message, c.token, "[token]")
		switch resp.StatusCode {
		case http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return true, e
		}
		return false, e
	}
	if err := json.Unmarshal(b, out); err != nil {
		return false, fmt.Errorf("%s %s: the answer is not the JSON expected: %w", method, redactURL(u), err)
	}
	return false, nil
}

func newRequestID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "r-" + hex.EncodeToString(b)
}

// scrubToken keeps the token out of an error, should a transport ever
// echo a header back.
func scrubToken(err error, token string) error {
	if token == "" || !strings.Contains(err.Error(), token) {
		return err
	}
	return errors.New(strings.ReplaceAll(err.Error(), token, "[token]"))
}

// redactURL drops user info and query from an address before it is shown.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable address)"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
