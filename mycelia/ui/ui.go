package ui

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sporectl/sporectl/internal/lazy"
	"github.com/sporectl/sporectl/mycelia/auth"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// Prefix is where serve mounts the page.
const Prefix = "/ui/"

// Bounds of what one request reads.
const (
	// DefaultLimit is how many events a spore page shows.
	DefaultLimit = 200
	// MaxLimit bounds ?limit=.
	MaxLimit = 1000
	// DefaultFleetRows is how many spores a page of the fleet shows.
	DefaultFleetRows = 200
	// TailEvents is how many of a spore's last events the fleet page
	// reads to say what it is doing now.
	TailEvents = 16
	// DefaultPoll is how often a live tail polls a store that is no
	// Changes (one that cannot say when a log grows).
	DefaultPoll = time.Second
	// PollBatch bounds the events one poll of a live tail reads.
	PollBatch = 256
	// MaxBacklog bounds the events a live tail sends that are older than
	// the log's end when it starts; older ones are skipped (the page's
	// "older" link reads them).
	MaxBacklog = 1000
	// DefaultMaxStreams bounds live tails at once in one process.
	DefaultMaxStreams = 128
	// heartbeat keeps an idle stream's proxies from closing it.
	heartbeat = 15 * time.Second
	// writeWindow is how long one write of a stream may take.
	writeWindow = 30 * time.Second
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// pages are the page's templates, parsed on first use so that a command
// that serves no page (every one but serve and export) does not parse them.
var pages = lazy.New("ui.pages", func() *template.Template {
	return template.Must(template.New("").Funcs(template.FuncMap{
		"marker":  marker,
		"lineCls": lineClass,
		// account marks where the header shows the session (withAccount).
		"account": func() template.HTML { return accountMark },
	}).ParseFS(templateFS, "templates/*.html"))
})

// Handler serves the page. Its fields are dependencies, never state:
// every request starts from the store.
type Handler struct {
	Store state.Store
	// Auth decides who a request is (nil: one over Store with Now);
	// serve hands the same one to the API and to /metrics.
	Auth *auth.Authenticator
	// Pass observes the fleet for the fleet page: it runs read-only
	// (reconcile.Options{}); its Store is Store. The prompt box delivers
	// through it too (Pass.Deliver, as `sporectl prompt` does); nil: a
	// prompt stays in the outbox for the next reconcile.
	Pass *reconcile.Pass
	// Now is the clock (default time.Now).
	Now    func() time.Time
	Logger *slog.Logger
	// Poll overrides how often a live tail reads the store (default
	// SafetyPoll with a Changes store, else DefaultPoll).
	Poll time.Duration
	// MaxStreams bounds live tails at once (default DefaultMaxStreams).
	MaxStreams int
	// Shutdown, when done, ends every live tail (serve's SIGTERM: a
	// stream never ends by itself, and a graceful stop waits for it).
	Shutdown context.Context
	// Nonce makes each page's script nonce; default 128 random bits.
	// Tests fix it.
	Nonce func() string
	// WakeWait is how long a prompt with "wake it" waits for the woken
	// spore's bridge before the page answers; it then stays in the outbox
	// and the next reconcile delivers it (default DefaultWakeWait).
	WakeWait time.Duration

	// FleetShare is how long one fleet read serves the page loads after
	// it (default DefaultFleetShare; negative: only the loads that came
	// while it ran).
	FleetShare time.Duration
	// FleetRows is how many spores a page of the fleet shows (default
	// DefaultFleetRows).
	FleetRows int

	// FollowEvery is how often a spore watched live has its new lines
	// taken in (default DefaultFollowEvery; negative: never, leaving it to
	// cron `reconcile`).
	FollowEvery time.Duration

	streams   atomic.Int64
	followers follower
	mux       atomic.Pointer[http.ServeMux]
	live      liveHub // the store's watcher shared by live tails (watch.go)
	// fleetLive is the fleet read shared by the fleet's live streams
	// (fleet_live.go).
	fleetLive fleetShared
}

// ServeHTTP answers r with the page alone, on a mux of its own (tests,
// the export); serve registers the page and the API on one mux instead
// (Register).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m := h.mux.Load()
	if m == nil {
		m = http.NewServeMux()
		h.Register(m)
		// Alone, every other path is the page's too: no such page.
		m.Handle("/", h.guard(http.HandlerFunc(h.noRoute)))
		h.mux.CompareAndSwap(nil, m)
		m = h.mux.Load()
	}
	m.ServeHTTP(w, r)
}

// Register puts the page's patterns on m, each behind the page's checks
// (guard). What may POST is what is registered with POST (login, logout,
// a spore's prompt box): any other method or path under Prefix falls to
// the page's catch-all, which answers 405 for a method other than GET and
// HEAD, and 404 otherwise — after the access check, as every answer.
func (h *Handler) Register(m *http.ServeMux) {
	// The process that serves the page builds what renders it now, as it
	// starts, rather than in its first request.
	pages()
	md()
	p := pageMux{m: m, h: h}
	h.fleetRoutes(p)
	h.sporeRoutes(p)
	h.authRoutes(p)
	h.promptRoutes(p)
	static, _ := fs.Sub(staticFS, "static")
	p.Handle("GET /ui/static/", http.StripPrefix("/ui/static/", staticFiles(http.FileServerFS(static))))
	// Before the access check: the session cookie's Path is /ui/, so a
	// browser sends none to /ui, and the redirect says nothing.
	m.HandleFunc("GET /ui", func(w http.ResponseWriter, r *http.Request) {
		h.headers(w, r)
		http.Redirect(w, r, Prefix, http.StatusMovedPermanently)
	})
	p.HandleFunc("/ui", h.noRoute)
	p.HandleFunc(Prefix, h.noRoute)
}

// pageMux registers the page's patterns on the shared mux, each behind
// the page's checks.
type pageMux struct {
	m *http.ServeMux
	h *Handler
}

func (p pageMux) Handle(pattern string, next http.Handler) { p.m.Handle(pattern, p.h.guard(next)) }
func (p pageMux) HandleFunc(pattern string, f http.HandlerFunc) {
	p.m.Handle(pattern, p.h.guard(f))
}

// noRoute is the page's catch-all: a method the page does not take
// there (it only reads, but for its forms), or no such page.
func (h *Handler) noRoute(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		h.error(w, r, http.StatusMethodNotAllowed, "the page only reads (GET), but for its forms")
		return
	}
	h.error(w, r, http.StatusNotFound, "no such page")
}

// headers sets the security headers of every answer and puts the
// answer's script nonce in r's context.
func (h *Handler) headers(w http.ResponseWriter, r *http.Request) *http.Request {
	nonce := h.nonce()
	hdr := w.Header()
	hdr.Set("Content-Security-Policy", csp(nonce))
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("X-Frame-Options", "DENY")
	// same-origin, not no-referrer: a form's POST then carries its real
	// Origin (checkOrigin), while other sites still get nothing.
	hdr.Set("Referrer-Policy", "same-origin")
	hdr.Set("Cross-Origin-Opener-Policy", "same-origin")
	hdr.Set("Cross-Origin-Resource-Policy", "same-origin")
	return r.WithContext(context.WithValue(r.Context(), nonceKey{}, nonce))
}

// guard sets the security headers of every answer, checks the caller's
// access, and hands the request to next with it.
func (h *Handler) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = h.headers(w, r)
		a, no, err := h.allowed(r)
		if err != nil {
			// Fail closed: without the operator tokens nobody can be let in.
			h.logger().Error("ui: access check failed", "path", r.URL.Path, "err", err)
			h.error(w, r, http.StatusServiceUnavailable, "the store could not be read; see serve's log")
			return
		}
		if no != nil {
			if no.redirect != "" {
				http.Redirect(w, r, no.redirect, http.StatusSeeOther)
				return
			}
			h.error(w, r, no.status, no.text)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), accessKey{}, a)))
	})
}

// staticFiles serves the embedded stylesheet, never a directory listing.
func staticFiles(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "" || strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		next.ServeHTTP(w, r)
	})
}

// csp is the Content-Security-Policy of every answer: nothing from
// anywhere but this server, styles only from its stylesheet, scripts
// only inline with this answer's nonce, no frames, no forms elsewhere.
func csp(nonce string) string {
	return "default-src 'none'; style-src 'self'; script-src 'nonce-" + nonce + "'; connect-src 'self'; img-src 'self'; " +
		"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
}

type nonceKey struct{}

func nonceOf(r *http.Request) string {
	s, _ := r.Context().Value(nonceKey{}).(string)
	return s
}

func (h *Handler) nonce() string {
	if h.Nonce != nil {
		return h.Nonce()
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	// URL-safe: html/template writes it into the script's attribute as it
	// is ("+" would become "&#43;"), so the fleet's ETag can leave it out.
	return base64.RawURLEncoding.EncodeToString(b)
}

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now().UTC()
	}
	return time.Now().UTC()
}

func (h *Handler) logger() *slog.Logger {
	if h.Logger != nil {
		return h.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// accountMark is where layout.html's header shows who is logged in
// ({{account}}). It is its first occurrence in any page: only the
// <title> comes before it, and html/template escapes whatever a title
// holds.
const accountMark = "<!--account-->"

// withAccount fills the header's account mark: the operator's name and a
// log-out button for a session, nothing on the login and refusal pages. The pages' own data need not know about sessions.
func withAccount(page string, r *http.Request) string {
	a, _ := accessOf(r)
	fill := ""
	if a.Operator != "" {
		fill = ` <form class="logout" method="post" action="/ui/logout"><span class="as">` + template.HTMLEscapeString(a.Operator) +
			`</span> <input type="hidden" name="csrf" value="` + template.HTMLEscapeString(a.CSRF) + `"><button type="submit">log out</button></form>`
	}
	return strings.Replace(page, accountMark, fill, 1)
}

// errorPage is the data of error.html.
type errorPage struct {
	Nonce  string
	Title  string
	Status int
	Text   string
}

// error answers status with a short page; the text is for a person and
// never holds anything internal (a 500's cause goes to the log).
func (h *Handler) error(w http.ResponseWriter, r *http.Request, status int, text string) {
	hdr := w.Header()
	hdr.Del("Content-Length")
	hdr.Set("Cache-Control", "no-store")
	if accept := r.Header.Get("Accept"); strings.Contains(accept, "text/event-stream") || accept == "text/plain" {
		hdr.Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(status)
		fmt.Fprintln(w, text)
		return
	}
	h.render(w, r, status, "error.html", errorPage{Nonce: nonceOf(r), Title: http.StatusText(status), Status: status, Text: text})
}

// internal answers 500 and logs why.
func (h *Handler) internal(w http.ResponseWriter, r *http.Request, err error) {
	h.logger().Error("ui: request failed", "path", r.URL.Path, "err", err)
	h.error(w, r, http.StatusInternalServerError, "the store could not be read; see serve's log")
}

// render executes a template into memory first, so a failure is a clean
// 500 rather than half a page.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, name string, data any) {
	body, ok := h.execute(name, data)
	if !ok {
		status = http.StatusInternalServerError
	}
	h.send(w, r, status, body)
}

// execute renders template name, or on failure a short error page (and
// false).
func (h *Handler) execute(name string, data any) (string, bool) {
	var b strings.Builder
	if err := pages().ExecuteTemplate(&b, name, data); err != nil {
		h.logger().Error("ui: render failed", "template", name, "err", err)
		return "<!doctype html><title>Internal error</title><p>internal error</p>\n", false
	}
	return b.String(), true
}

// send answers a page that no browser keeps (no-store), its account
// filled in.
func (h *Handler) send(w http.ResponseWriter, r *http.Request, status int, page string) {
	w.Header().Set("Cache-Control", "no-store")
	h.sendBody(w, r, status, withAccount(page, r))
}
