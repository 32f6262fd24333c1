package ui

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sporectl/sporectl/mycelia/auth"
)

// Operator access (docs/security.md "Operator tokens", docs/page.md
// "Access"). Every request but the login form and the stylesheets needs a
// session, from any address, loopback included: on the local runtime every
// spore is a loopback process, so loopback proves nothing. POST /ui/login
// makes a session from an operator token; a store with none yet answers
// 403 saying how to make one. Who a request is, serve's authenticator
// decides (mycelia/auth: the session cookie, its signature and expiry),
// for the page as for the API and /metrics; the page decides what a
// request without a session may see.

const (
	// SessionCookie holds an operator's session.
	SessionCookie = auth.SessionCookie
	// SessionLifetime bounds a session: log in again after it.
	SessionLifetime = auth.SessionLifetime
	// maxLoginBody bounds a login form.
	maxLoginBody = 4 << 10
)

// access is what ServeHTTP decided about a request, for its handlers.
type access struct {
	// Operator is the logged-in operator; "" only on the public routes
	// (the login form, the stylesheets) before a login.
	Operator string
	// CSRF is the token the request's forms must carry back; "" when
	// there is none (a login page before the session exists).
	CSRF string
	// session is the cookie's value; it never goes into a page or a log.
	session string
}

type accessKey struct{}

func accessOf(r *http.Request) (access, bool) {
	if r == nil {
		return access{}, false
	}
	a, ok := r.Context().Value(accessKey{}).(access)
	return a, ok
}

// sender is who a prompt from this request is from, the form `sporectl
// prompt` records for a person: the logged-in operator, always (a request
// without a session never reaches the prompt box).
func (h *Handler) sender(a access) string {
	return "user:" + a.Operator
}

// authenticator is Auth, or one over Store with the page's clock.
func (h *Handler) authenticator() auth.Authenticator {
	if h.Auth != nil {
		return *h.Auth
	}
	return auth.Authenticator{Store: h.Store, Now: h.now}
}

// refusal is a request the access rule turns away: a status and a text
// for a person, or a redirect to the login page.
type refusal struct {
	status   int
	text     string
	redirect string
}

// NoOperatorText is what the page answers (403) while the store has no
// operator token, and what serve's first line says then.
const NoOperatorText = "no operator exists: run `sporectl token create --operator NAME`, then log in to the page with the token it prints"

// allowed is the access rule (docs/page.md "Access"). Every request needs
// a valid session, from anywhere, loopback included: a spore of the local
// runtime, kubectl port-forward and any local proxy all arrive on loopback.
// Only the stylesheets answer without one, and the login page once an
// operator token exists. While the store has none, nobody can log in, and
// every other request gets 403 saying how to make one. Pages without a
// session redirect to the login page; the live tails and forms answer 401.
// An error is the store's: without the operator tokens nobody is let in.
func (h *Handler) allowed(r *http.Request) (access, *refusal, error) {
	who, err := h.authenticator().Who(r.Context(), r, auth.Want{Kind: auth.OperatorSession})
	switch {
	case err == nil:
		return access{Operator: who.Operator, session: who.Session.Value, CSRF: csrfOf(who.Session.Key, who.Session.Value)}, nil, nil
	case !errors.Is(err, auth.ErrUnauthorized):
		return access{}, nil, err
	case static(r):
		return access{}, nil, nil
	case errors.Is(err, auth.ErrNoOperator):
		return access{}, &refusal{status: http.StatusForbidden, text: NoOperatorText}, nil
	case r.URL.Path == Prefix+"login":
		return access{}, nil, nil
	case (r.Method == http.MethodGet || r.Method == http.MethodHead) && !stream(r):
		return access{}, &refusal{redirect: Prefix + "login?" + url.Values{"next": {r.URL.RequestURI()}}.Encode()}, nil
	}
	return access{}, &refusal{status: http.StatusUnauthorized, text: "log in first: this page needs an operator session (" + Prefix + "login)"}, nil
}

// stillAllowed re-checks, for a long answer (a live stream), that the
// request's session still holds: its token not revoked, its expiry not
// passed. Access is otherwise checked once per request, and a stream
// lasts as long as the browser keeps it open. A store that cannot be read
// ends the stream too: its reconnect is checked afresh.
func (h *Handler) stillAllowed(r *http.Request) bool {
	_, err := h.authenticator().Who(r.Context(), r, auth.Want{Kind: auth.OperatorSession})
	return err == nil
}

// recheck is how often a stream re-checks its session at most.
const recheck = time.Second

// static reports whether r asks for a stylesheet, which every page needs,
// the login and refusal pages included, and which says nothing about the
// fleet.
func static(r *http.Request) bool {
	return strings.HasPrefix(r.URL.Path, Prefix+"static/")
}

// stream reports whether r asks for a live tail (Server-Sent Events).
func stream(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream") || strings.HasSuffix(r.URL.Path, "/events")
}

// overTLS reports whether the browser reached us over HTTPS: serve's own
// TLS, or a proxy in front that says so. Trusting the proxy's header can
// only make the cookie stricter.
func overTLS(r *http.Request) bool {
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// newSession is a session cookie's value (auth.SessionValue), as the
// page's tests make their sessions.
func newSession(name string, key []byte, expires time.Time) string {
	return auth.SessionValue(name, key, expires)
}

// csrfOf is the CSRF token of a session: an HMAC of the cookie keyed by
// its session key, so it is checked without server-side state, changes
// with every login, and cannot be made from the store.
func csrfOf(key []byte, session string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("sporectl csrf v2\x00" + session))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkOrigin refuses a form that did not come from this page: its Origin
// (or, without one, its Referer) must name the host the request was sent
// to. Browsers send Origin with every POST; the page's referrer policy
// (same-origin) keeps it a real origin rather than "null".
func checkOrigin(r *http.Request) error {
	src, what := r.Header.Get("Origin"), "Origin"
	if src == "" {
		src, what = r.Header.Get("Referer"), "Referer"
	}
	if src == "" {
		return errors.New("the form carries neither Origin nor Referer; send it from the page")
	}
	u, err := url.Parse(src)
	if err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host) {
		return fmt.Errorf("the form came from another site (%s does not match this page's host)", what)
	}
	return nil
}

// checkCSRF requires the form's csrf field to be the request's CSRF token.
func checkCSRF(r *http.Request, a access) error {
	got := r.PostForm.Get("csrf")
	if a.CSRF == "" || got == "" {
		return errors.New("the form has no CSRF token; reload the page and send it again")
	}
	if !hmac.Equal([]byte(got), []byte(a.CSRF)) {
		return errors.New("the form's CSRF token is not this session's; reload the page and send it again")
	}
	return nil
}

// loginPage is the data of login.html.
type loginPage struct {
	Nonce string
	Title string
	// Next is where a successful login goes (a path of the page).
	Next string
	// Error says why the last try failed.
	Error string
	// Operator is set when the browser is logged in already.
	Operator string
	CSRF     string
}

func (h *Handler) authRoutes(m pageMux) {
	m.HandleFunc("GET /ui/login", h.loginForm)
	m.HandleFunc("POST /ui/login", h.login)
	m.HandleFunc("GET /ui/logout", h.logoutForm)
	m.HandleFunc("POST /ui/logout", h.logout)
}

// safeNext keeps a login's destination inside the page: a path under
// /ui/, never another host ("//evil", "/\evil") or a scheme.
func safeNext(next string) string {
	if !strings.HasPrefix(next, Prefix) || strings.ContainsAny(next, "\\\x00\r\n") || strings.HasPrefix(next, "//") || len(next) > 2048 {
		return Prefix
	}
	if u, err := url.Parse(next); err != nil || u.Host != "" || u.Scheme != "" {
		return Prefix
	}
	return next
}

func (h *Handler) loginForm(w http.ResponseWriter, r *http.Request) {
	a, _ := accessOf(r)
	h.render(w, r, http.StatusOK, "login.html", loginPage{Nonce: nonceOf(r), Title: "Log in", Next: safeNext(r.URL.Query().Get("next")),
		Operator: a.Operator, CSRF: a.CSRF})
}

// login is POST /ui/login: the token in the form's body (never a URL)
// becomes a session cookie. A wrong token is a 401 page; there is no
// delay or lockout, since a 256-bit token cannot be guessed (failures are
// logged, without what was typed, for whoever watches).
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	if err := checkOrigin(r); err != nil {
		h.error(w, r, http.StatusForbidden, err.Error())
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxLoginBody)
	if err := parseForm(r); err != nil {
		h.error(w, r, http.StatusBadRequest, "the login form could not be read: "+err.Error())
		return
	}
	next := safeNext(r.PostForm.Get("next"))
	sess, err := h.authenticator().Login(r.Context(), strings.TrimSpace(r.PostForm.Get("token")))
	if errors.Is(err, auth.ErrUnauthorized) {
		h.logger().Warn("ui: failed login", "remote", r.RemoteAddr)
		h.render(w, r, http.StatusUnauthorized, "login.html", loginPage{Nonce: nonceOf(r), Title: "Log in", Next: next,
			Error: "That is not a valid operator token (or it was revoked)."})
		return
	}
	if err != nil {
		h.internal(w, r, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: sess.Value, Path: Prefix, Expires: sess.Expires,
		MaxAge: int(SessionLifetime / time.Second), HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: overTLS(r)})
	h.logger().Info("ui: operator logged in", "operator", sess.Operator, "remote", r.RemoteAddr)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (h *Handler) logoutForm(w http.ResponseWriter, r *http.Request) {
	a, _ := accessOf(r)
	h.render(w, r, http.StatusOK, "login.html", loginPage{Nonce: nonceOf(r), Title: "Log out", Next: Prefix,
		Operator: a.Operator, CSRF: a.CSRF})
}

// logout is POST /ui/logout: the browser forgets its session. (A copy of
// the cookie stays valid until it expires or the token is revoked.)
func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	a, _ := accessOf(r)
	if err := checkOrigin(r); err != nil {
		h.error(w, r, http.StatusForbidden, err.Error())
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxLoginBody)
	if err := parseForm(r); err != nil {
		h.error(w, r, http.StatusBadRequest, "the form could not be read: "+err.Error())
		return
	}
	if err := checkCSRF(r, a); err != nil {
		h.error(w, r, http.StatusForbidden, err.Error())
		return
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: "", Path: Prefix, MaxAge: -1, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: overTLS(r)})
	if a.Operator != "" {
		h.logger().Info("ui: operator logged out", "operator", a.Operator)
	}
	http.Redirect(w, r, Prefix+"login", http.StatusSeeOther)
}
