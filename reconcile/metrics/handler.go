package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sporectl/sporectl/mycelia/auth"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// Path is where serve answers scrapes.
const Path = "/metrics"

// Unauthorized is the body of a refused scrape (401).
const Unauthorized = "unauthorized: " + Path + " needs the header \"Authorization: Bearer <operator token>\" " +
	"(Prometheus: authorization.credentials_file); make a token with `sporectl token create --operator NAME`. " +
	"A spore's token is not an operator's."

// Handler answers GET /metrics (docs/metrics.md): the caller must present
// an operator's token as a bearer token, from any address, loopback
// included (docs/security.md: on the local runtime every spore is a
// loopback process). Each scrape then runs one read-only pass
// (reconcile.Options{}, as the page's fleet does) and answers the
// fleet's families from its outcome with the process's counters beside
// them: what the store and the fleet say now, nothing kept between
// scrapes but the counters. Scrapes that arrive while a pass runs share
// its outcome rather than each running one.
type Handler struct {
	Store state.Store
	// Auth decides who a scrape is (nil: one over Store); serve hands
	// the same one to the API and the page.
	Auth *auth.Authenticator
	// Pass is run read-only per scrape; its Store is Store.
	Pass *reconcile.Pass
	// Process is serve's counters (nil: the fleet's families only).
	Process *Process
	// Now is the clock of the fleet's families (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger

	// turn is held by the scrape running a pass; last is the outcome
	// of the latest one and when it finished.
	once sync.Once
	turn chan struct{}
	last *scrape
}

// scrape is one pass's families and when its pass finished.
type scrape struct {
	fleet    prometheus.Collector
	finished time.Time
}

// NewHandler returns a handler; its fields may be set until it serves.
func NewHandler(st state.Store, ps *reconcile.Pass, proc *Process) *Handler {
	return &Handler{Store: st, Pass: ps, Process: proc}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if status, msg := h.authorize(r); status != 0 {
		if status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="sporectl metrics"`)
		}
		h.logger().Warn("metrics: scrape refused", "remote", r.RemoteAddr, "status", status)
		http.Error(w, msg, status)
		return
	}
	fleet, err := h.fleet(r.Context())
	if err != nil {
		h.logger().Error("metrics: the pass failed", "err", err)
		http.Error(w, "the fleet could not be read: see serve's log", http.StatusServiceUnavailable)
		return
	}
	reg := prometheus.NewRegistry()
	if err := reg.Register(fleet); err != nil {
		h.logger().Error("metrics: register the fleet's families", "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	gs := prometheus.Gatherers{reg}
	if h.Process != nil {
		gs = append(gs, h.Process.Gatherer())
	}
	promhttp.HandlerFor(gs, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError,
		ErrorLog: slog.NewLogLogger(h.logger().Handler(), slog.LevelError)}).ServeHTTP(w, r)
}

// authorize returns 0 for a request with an operator's bearer token,
// else the status and body of its refusal. Who it is, serve's
// authenticator decides (mycelia/auth), as for the API and the page.
// Every refusal for a token is the same 401, whatever was wrong (none,
// two, another scheme, a spore's token, a revoked one), so nothing is
// learnt from it.
func (h *Handler) authorize(r *http.Request) (int, string) {
	_, err := h.authenticator().Who(r.Context(), r, auth.Want{Kind: auth.OperatorToken})
	switch {
	case err == nil:
		return 0, ""
	case errors.Is(err, auth.ErrUnauthorized):
		return http.StatusUnauthorized, Unauthorized
	}
	// Fail closed: without the operator tokens nobody can be let in.
	h.logger().Error("metrics: authenticate the scrape", "err", err)
	return http.StatusServiceUnavailable, "the store could not be read: see serve's log"
}

// authenticator is Auth, or one over Store.
func (h *Handler) authenticator() auth.Authenticator {
	if h.Auth != nil {
		return *h.Auth
	}
	return auth.Authenticator{Store: h.Store}
}

// fleet is the fleet's families from a pass that finished after this
// scrape arrived: the one running now, when one is, else a new one.
func (h *Handler) fleet(ctx context.Context) (prometheus.Collector, error) {
	asked := time.Now()
	h.once.Do(func() { h.turn = make(chan struct{}, 1) })
	select {
	case h.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-h.turn }()
	if h.last != nil && h.last.finished.After(asked) {
		return h.last.fleet, nil
	}
	out, err := h.Pass.Run(ctx, reconcile.Options{})
	if err != nil {
		return nil, fmt.Errorf("read-only pass: %w", err)
	}
	h.last = &scrape{fleet: Fleet(out, h.now()), finished: time.Now()}
	return h.last.fleet, nil
}

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func (h *Handler) logger() *slog.Logger {
	if h.Logger != nil {
		return h.Logger
	}
	return slog.New(slog.DiscardHandler)
}
