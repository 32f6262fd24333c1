package gateway

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/sporectl/sporectl/internal/share"
	"github.com/sporectl/sporectl/mycelia/auth"
	"github.com/sporectl/sporectl/state"
)

// Prefix is where serve answers the model's API: a spore's
// ANTHROPIC_BASE_URL is the store's api-url and Prefix.
const Prefix = "/model"

// Bounds of a call.
const (
	// MaxRequestBody bounds a call's body: Claude Code sends the whole
	// conversation each time, a few MiB at most in practice.
	MaxRequestBody = 32 << 20
	// MaxAnswer bounds a non-streamed answer the gateway reads whole to
	// count it before it passes it on.
	MaxAnswer = 16 << 20
	// MaxCall is how long one call may take, its stream included
	// (serve's own write timeout is shorter than a long answer).
	MaxCall = 30 * time.Minute
	// SharedFleetAge is how old the fleet read that a colony's spend is
	// summed from may be: one read serves the calls of about two seconds.
	SharedFleetAge = 2 * time.Second
	// countTimeout bounds one count in the store; a count that fails
	// cuts the answer.
	countTimeout = 10 * time.Second
)

// Metrics is what the gateway reports (reconcile/metrics.Process);
// labels never name a spore.
type Metrics interface {
	// ModelRequest is one call answered, by the caller's colony ("" when
	// it proved none) and the status code it was given.
	ModelRequest(colony string, code int)
	// ModelTokens is usage counted of a colony's spore.
	ModelTokens(colony string, u state.Usage)
	// ModelUpstream is how long the upstream took to answer a call's
	// headers.
	ModelUpstream(took time.Duration)
}

// Config is what a Gateway needs.
type Config struct {
	Store state.Store
	Auth  auth.Authenticator
	// Upstream is the Messages API's base URL (serve --model-upstream);
	// a call to /model/v1/messages goes to Upstream's path + /v1/messages.
	Upstream *url.URL
	// Key is the model key sent upstream as x-api-key; "": every call is
	// refused (serve holds no key).
	Key string
	// Metrics may be nil.
	Metrics Metrics
	Logger  *slog.Logger
	// Now is the clock budgets and counts are judged by (default
	// time.Now).
	Now func() time.Time
	// FleetShare is how old the fleet read that colonies' spends are
	// summed from may be (0: SharedFleetAge; negative: only calls that
	// come while a read runs share it).
	FleetShare time.Duration
	// Transport carries calls upstream (nil: DefaultTransport's kind with
	// the timeouts of a model call).
	Transport http.RoundTripper
}

// Gateway is serve's model gateway; New makes one.
type Gateway struct {
	cfg   Config
	proxy *httputil.ReverseProxy
	rate  *limiter
	fleet share.Value[fleet]
}

// New is a gateway for cfg.
func New(cfg Config) *Gateway {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	if cfg.FleetShare == 0 {
		cfg.FleetShare = SharedFleetAge
	}
	if cfg.Transport == nil {
		cfg.Transport = NewTransport()
	}
	g := &Gateway{cfg: cfg, rate: newLimiter()}
	g.proxy = g.newProxy()
	return g
}

// NewTransport is the upstream's transport: bounded dials, handshakes
// and waits for an answer's headers (a non-streamed answer comes whole,
// so that wait is a model's whole answer), no proxy from the
// environment's settings unless they say so.
func NewTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 10 * time.Minute,
		ExpectContinueTimeout: time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   64,
		ForceAttemptHTTP2:     true,
	}
}

// Register mounts the gateway under Prefix on mux: every method and path
// there is the gateway's, so what it does not pass is its own 404.
func (g *Gateway) Register(mux *http.ServeMux) {
	mux.Handle(Prefix+"/", g)
}

// Passed are the calls the gateway passes upstream: what Claude Code
// calls (docs/gateway.md), by method and path under Prefix. Claude Code
// also asks HEAD /api/hello, without a key, to see that its API is
// there: the gateway answers that itself (hello).
var Passed = []string{
	"POST /v1/messages",
	"POST /v1/messages/count_tokens",
}

// passes reports whether method and path (under Prefix, without it) are
// a call the gateway passes.
func passes(method, path string) bool {
	for _, p := range Passed {
		if p == method+" "+path {
			return true
		}
	}
	return false
}

// ServeHTTP answers one call: it is judged (call.go), then forwarded and
// counted (proxy.go, count.go).
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := &statusWriter{ResponseWriter: w}
	c := &call{}
	defer func() { g.cfg.Metrics.ModelRequest(c.colony, rec.code()) }()
	path := strings.TrimPrefix(r.URL.Path, Prefix)
	if path == "/api/hello" && (r.Method == http.MethodHead || r.Method == http.MethodGet) {
		rec.WriteHeader(http.StatusOK)
		return
	}
	if !passes(r.Method, path) {
		refusal{http.StatusNotFound, errNotFound, "the model gateway passes only " + strings.Join(Passed, " and ") + " under " + Prefix + ", not " + r.Method + " " + path, 0}.write(rec)
		return
	}
	if ref, ok := g.admit(r, c); !ok {
		ref.write(rec)
		return
	}
	body, ref, ok := readBody(r)
	if !ok {
		ref.write(rec)
		return
	}
	// A model's answer may take longer than serve's write timeout allows
	// other requests; MaxCall bounds it instead. (Its read timeout ended
	// with the body, read by now.)
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Now().Add(MaxCall))
	ctx, cancel := context.WithTimeout(r.Context(), MaxCall)
	defer cancel()
	out := r.WithContext(withCall(ctx, c))
	out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	g.proxy.ServeHTTP(rec, out)
}

// readBody reads r's body whole, at most MaxRequestBody (false: more, or
// a body that could not be read, and the answer). It is read before
// anything goes upstream, so the upstream gets a whole request or none,
// and is done with before the answer is written (a body the upstream's
// request still read while serve answered is one serve may discard
// under it: that closed streams under load).
func readBody(r *http.Request) ([]byte, refusal, bool) {
	if r.ContentLength > MaxRequestBody {
		return nil, tooLarge(), false
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, MaxRequestBody+1))
	switch {
	case err != nil:
		return nil, refusal{http.StatusBadRequest, errInvalid, "the call's body could not be read", 0}, false
	case len(b) > MaxRequestBody:
		return nil, tooLarge(), false
	}
	return b, refusal{}, true
}

// statusWriter keeps the status code a call was answered with, for the
// metrics.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (flushes,
// deadlines).
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Flush passes each streamed event on as it comes (ReverseProxy asks).
func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// code is what the call was answered with; a call cut before any answer
// (the client left, the stream failed at once) is 499, as proxies say.
func (s *statusWriter) code() int {
	if s.status == 0 {
		return 499
	}
	return s.status
}

type noMetrics struct{}

func (noMetrics) ModelRequest(string, int)        {}
func (noMetrics) ModelTokens(string, state.Usage) {}
func (noMetrics) ModelUpstream(time.Duration)     {}
