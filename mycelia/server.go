package mycelia

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sporectl/sporectl/internal/share"
	"github.com/sporectl/sporectl/mycelia/auth"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/outbox"
	"github.com/sporectl/sporectl/state"
)

// Server answers the API over one store. It is an http.Handler; its
// fields are dependencies, never state: every request starts from the
// store, but for GET /api/spores, whose fleet read is shared by the lists
// asked within SporesShare of it (a copy of what the store and the fleet
// said, never written back), and the sends waiting for the transaction
// in flight, which the next records together (sendgroup.go).
type Server struct {
	Store state.Store
	// Auth decides who a caller is (nil: one over Store); serve hands the
	// same one to the page and to /metrics.
	Auth *auth.Authenticator
	// Pass delivers messages and observes spores; its Store is Store.
	Pass *reconcile.Pass
	// Now is the clock (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger
	// Background, when set, lets a message that woke its target be
	// delivered once the target comes up (for at most FollowWoken), after
	// the answer. Holding it is an optimisation: the message is in the
	// outbox and the next reconcile delivers it if this process dies.
	Background  context.Context
	FollowWoken time.Duration
	// RateLimit bounds the messages one spore may send in any RatePer
	// (default a minute); 0 for none. Counted from the store, it holds
	// across every server of the store.
	RateLimit int
	RatePer   time.Duration
	// AddressCheck checks the address of every tell not forced (nil:
	// NameCheck, the deterministic fallback). When it fails (a model's
	// timeout, 5xx, a reply it cannot parse), NameCheck decides.
	AddressCheck AddressCheck
	// Metrics hears of the answers of the routes that send a message
	// (nil: nobody); serve counts them (reconcile/metrics).
	Metrics MessageMetrics
	// SporesShare is how long one fleet read of GET /api/spores (a
	// read-only pass over the whole fleet and every last event) serves
	// the lists asked after it, whoever asks: its answer may be that old
	// (default DefaultSporesShare; negative: only the lists asked while a
	// read runs share it). The address check's read of the records, whose
	// candidates it may name, is shared for as long.
	SporesShare time.Duration

	// fleet is the shared fleet read of GET /api/spores (spores_list.go).
	fleet share.Value[*sporesFleet]
	// records is the spore records the address check names its
	// candidates from, shared for SporesShare as the fleet is (address.go).
	records share.Value[[]state.Spore]

	// sends is the queue of the sends waiting for the transaction in
	// flight, recorded together when it ends (sendgroup.go).
	sends sendGroup

	followers sync.WaitGroup
	followMu  sync.Mutex
	following int
	// mux is ServeHTTP's own mux, built once.
	mux atomic.Pointer[http.Handler]
}

// MessageMetrics hears what became of each request to a route that sends
// a message (summons, tell, swarm tell: the rows whose answer is a
// SendResponse). Sent: the message was recorded (a repeated request id,
// which records nothing, is not sent again). Refused: the answer was an
// error, with its code (CodeAsleep, CodeRateLimited, …). Route is the
// row's Name. Neither may block.
type MessageMetrics interface {
	Sent(route string)
	Refused(route, code string)
}

// maxFollowers bounds background deliveries in flight.
const maxFollowers = 64

// Failpoint is called at named points of a request — "committed": a
// message is recorded and neither delivered nor answered yet. Tests
// replace it to kill the process there; it is a no-op otherwise.
var Failpoint = func(name string) {}

// call is one authenticated request.
type call struct {
	w      http.ResponseWriter
	r      *http.Request
	caller state.Spore
	// id is the route's {id} segment, unchecked.
	id string
	// target is the spore id names, when read with the caller
	// (authenticate): one View for both.
	target readAhead
	// requestID is the caller's idempotency key (generated when absent).
	requestID string
}

// readAhead is a spore read before its handler asks for it.
type readAhead struct {
	id  string // the spore read; "" when none was
	sp  state.Spore
	err error // nil, or the read's ErrNotFound
}

func (c *call) ctx() context.Context { return c.r.Context() }

// ServeHTTP answers r with the API alone, on a mux of its own (tests,
// benchmarks); serve registers the API and the page on one mux instead
// (Register, Canonical).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := s.mux.Load()
	if h == nil {
		m := http.NewServeMux()
		s.Register(m)
		var own http.Handler = s.Canonical(m, "")
		s.mux.CompareAndSwap(nil, &own)
		h = s.mux.Load()
	}
	(*h).ServeHTTP(w, r)
}

// handler answers rt's requests (rt nil: no route, 404): it
// authenticates, checks the caller's rank, and runs the route's handler;
// it logs one line per request (never a header).
func (s *Server) handler(rt *Route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		name, caller := "unknown", ""
		defer func() {
			if p := recover(); p != nil {
				s.logger().Error("panic in handler", "route", name, "panic", p)
				if sw.status == 0 {
					writeError(sw, errorf(http.StatusInternalServerError, CodeInternal, "internal error"))
				}
			}
			s.logger().Info("request", "method", r.Method, "route", name, "spore", caller, "status", sw.status, "duration", time.Since(start).Round(time.Microsecond))
			if s.Metrics != nil && rt != nil && rt.sends() && sw.code != "" {
				s.Metrics.Refused(rt.Name, sw.code)
			}
		}()
		// A GET pattern matches HEAD too; the API has no HEAD.
		if rt == nil || r.Method != rt.Method {
			writeError(sw, errorf(http.StatusNotFound, CodeNotFound, "not found"))
			return
		}
		name = rt.Name
		c := &call{w: sw, r: r}
		if rt.wildcard != "" {
			c.id = r.PathValue(rt.wildcard)
		}
		if !rt.Public {
			// The spore a GET is about is read with the caller; a tell
			// reads its target in its send's transaction (tell).
			also := ""
			if rt.wildcard == "id" && rt.Method == http.MethodGet && state.ValidateID(c.id) == nil {
				also = c.id
			}
			sp, err := s.authenticate(r.Context(), r, also, &c.target)
			if err != nil {
				s.fail(sw, rt, err)
				return
			}
			c.caller, caller = sp, sp.ID
			if !rt.Allows(sp.Rank) {
				writeError(sw, errorf(http.StatusForbidden, CodeForbidden, "a spore of rank %s may not call %s %s", sp.Rank, rt.Method, rt.Pattern))
				return
			}
			if c.requestID, err = requestID(r); err != nil {
				s.fail(sw, rt, err)
				return
			}
		}
		status, body, err := rt.handle(s, c)
		if err != nil {
			s.fail(sw, rt, err)
			return
		}
		if res, ok := body.(SendResponse); ok && s.Metrics != nil && !res.Duplicate {
			s.Metrics.Sent(rt.Name)
		}
		writeJSON(sw, status, body)
	})
}

// authenticate finds the caller from its id and token (mycelia/auth, as
// for serve's other surfaces). Every failure is the same 401, whatever was
// wrong, so nothing is learnt from it. A right token of a spore whose
// desired state is not Running is then refused with 403 caller_asleep.
//
// also, when not "", is a spore the call is about, read in the same View
// into target (its ErrNotFound kept there, for the handler to answer), so
// a call about one spore opens one View, not two.
func (s *Server) authenticate(ctx context.Context, r *http.Request, also string, target *readAhead) (state.Spore, error) {
	who, err := s.authenticator().Who(ctx, r, auth.Want{Kind: auth.SporeToken, Also: also})
	if errors.Is(err, auth.ErrUnauthorized) {
		return state.Spore{}, errorf(http.StatusUnauthorized, CodeUnauthorized, "unauthorized: send Authorization: Bearer <token> and %s: <spore id>", HeaderSpore)
	}
	if err != nil {
		return state.Spore{}, err
	}
	if also != "" {
		*target = readAhead{id: who.Also.ID, sp: who.Also.Spore, err: who.Also.Err}
	}
	sp := who.Spore
	// Only once the token is proven: nothing of a sleeping spore runs, so
	// a call with its token is not the spore's, and a stopped one must
	// not act. Told only to whoever holds the token.
	if sp.Desired != state.Running {
		return state.Spore{}, errorf(http.StatusForbidden, CodeCallerAsleep,
			"spore %s is asleep (desired %s): a sleeping or stopped spore may not call serve; nothing was done (it may call again once woken)", sp.ID, sp.Desired)
	}
	return sp, nil
}

// authenticator is Auth, or one over Store.
func (s *Server) authenticator() auth.Authenticator {
	if s.Auth != nil {
		return *s.Auth
	}
	return auth.Authenticator{Store: s.Store, Now: s.Now}
}

// CodeCallerAsleep: the caller's own desired state is Paused or Stopped
// (403): its token is right, but it may not act until it is woken.
const CodeCallerAsleep = "caller_asleep"

// requestID is the caller's idempotency key, or a fresh one.
func requestID(r *http.Request) (string, error) {
	v := r.Header.Values(HeaderRequestID)
	switch {
	case len(v) == 0:
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		return "srv-" + hex.EncodeToString(b), nil
	case len(v) > 1 || v[0] == "" || len(v[0]) > MaxRequestIDLen:
		return "", errorf(http.StatusBadRequest, CodeBadRequest, "%s must be one value of 1 to %d characters", HeaderRequestID, MaxRequestIDLen)
	}
	for _, c := range []byte(v[0]) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return "", errorf(http.StatusBadRequest, CodeBadRequest, "%s may hold only letters, digits, '-', '_' and '.'", HeaderRequestID)
		}
	}
	return v[0], nil
}

// messageID is the outbox id of a message: derived from who sends it to
// whom under which request id, so a retry names the same entry and no
// caller can name (or suppress) another's.
func messageID(from, to, requestID string) string {
	sum := sha256.Sum256([]byte("sporectl message\x00" + from + "\x00" + to + "\x00" + requestID))
	return "m-" + hex.EncodeToString(sum[:12])
}

// fail writes err as the answer: an *Error as it is, the store's and
// pass's errors by kind, anything else as a 500 logged here (the answer
// says no more than "internal error").
func (s *Server) fail(w http.ResponseWriter, rt *Route, err error) {
	var ae *Error
	var asleep *outbox.AsleepError
	var stopped *outbox.StoppedError
	var limited *outbox.RateLimitError
	var unavail *state.UnavailableError
	var invalid *state.InvalidError
	var tooLarge *outbox.TooLargeError
	switch {
	case errors.As(err, &ae):
	case errors.As(err, &asleep) && rt == RouteSwarmTell:
		// A swarm tell has no wake: only a mycologist's tell may ask for one.
		ae = errorf(http.StatusConflict, CodeAsleep, "spore %s is asleep (desired %s): nothing was sent; a swarm tell does not wake a teammate a person put to sleep (ask your mycologist)", asleep.ID, asleep.Desired)
	case errors.As(err, &tooLarge):
		// Its text is within MaxTextBytes, but not once framed (a bridge's
		// bound): refused as a text that is too long.
		ae = errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, "%v", tooLarge)
	case errors.As(err, &asleep):
		ae = errorf(http.StatusConflict, CodeAsleep, "spore %s is asleep (desired %s): nothing was sent; send it again with \"wake\": true (--wake) to wake it", asleep.ID, asleep.Desired)
	case errors.As(err, &stopped):
		ae = errorf(http.StatusConflict, CodeStopped, "spore %s is stopped: nothing was sent; a message from a spore never wakes a stopped spore (a person runs `sporectl wake %s`)", stopped.ID, stopped.ID)
	case errors.As(err, &limited):
		w.Header().Set("Retry-After", strconv.Itoa(int(limited.RetryAfter/time.Second)))
		ae = errorf(http.StatusTooManyRequests, CodeRateLimited, "spore %s sent %d messages in the last %s, its limit: nothing was sent; try again in %s", limited.Spore, limited.Limit, limited.Per, limited.RetryAfter)
	case errors.As(err, &invalid):
		ae = errorf(http.StatusBadRequest, CodeBadRequest, "%v", invalid)
	case errors.Is(err, state.ErrNotFound):
		// The target went away between two reads of the store.
		ae = errorf(http.StatusNotFound, CodeNotFound, "not found")
	case errors.As(err, &unavail), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled), errors.Is(err, state.ErrOutcomeUnknown):
		s.logger().Warn("store unavailable", "route", rt.Name, "err", err)
		ae = errorf(http.StatusServiceUnavailable, CodeUnavailable, "the store is not available; try again")
	default:
		s.logger().Error("request failed", "route", rt.Name, "err", err)
		ae = errorf(http.StatusInternalServerError, CodeInternal, "internal error")
	}
	writeError(w, ae)
}

func writeError(w http.ResponseWriter, e *Error) {
	if sw, ok := w.(*statusWriter); ok {
		sw.code = e.Code
	}
	switch e.Status {
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Bearer realm="sporectl"`)
		// Its body is never read: do not read it to keep the connection.
		w.Header().Set("Connection", "close")
	case http.StatusRequestEntityTooLarge:
		w.Header().Set("Connection", "close")
	}
	writeJSON(w, e.Status, e)
}

// encodedJSON is an answer encoded already, its newline included,
// written as it is: never appended to, it may be shared by answers.
type encodedJSON []byte

func writeJSON(w http.ResponseWriter, status int, v any) {
	var b []byte
	if e, ok := v.(encodedJSON); ok {
		b = e
	} else {
		var err error
		if b, err = json.Marshal(v); err != nil {
			status, b = http.StatusInternalServerError, []byte(`{"error":"internal error","code":"internal"}`)
		}
		b = append(b, '\n')
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// statusWriter remembers the status for the request's log line, and the
// error's code for Metrics.
type statusWriter struct {
	http.ResponseWriter
	status int
	code   string
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Wait blocks until the background deliveries end (their context is
// Background's).
func (s *Server) Wait() { s.followers.Wait() }

func (s *Server) ratePer() time.Duration {
	if s.RatePer > 0 {
		return s.RatePer
	}
	return time.Minute
}

func (s *Server) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

func (s *Server) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.New(slog.DiscardHandler)
}
