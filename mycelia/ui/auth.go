package ui

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sporectl/sporectl/state"
)

// Operator access (docs/security.md "Operator tokens", docs/page.md
// "Access"). Every request but the login form and the stylesheets needs a
// session, from any address, loopback included: on the local runtime every
// spore is a loopback process, so loopback proves nothing. POST /ui/login
// makes a session from an operator token; a store with none yet answers
// 403 saying how to make one. A session is a cookie that names the operator and its
// expiry, signed with an HMAC keyed by the stored hash of the operator's
// token: any serve replica checks it against the store alone, and
// revoking (or replacing) the token ends every session it made.

const (
	// SessionCookie holds an operator's session.
	SessionCookie = "sporectl_session"
	// SessionLifetime bounds a session: log in again after it.
	SessionLifetime = 12 * time.Hour
	// maxLoginBody bounds a login form.
	maxLoginBody = 4 << 10
	// clockSkew is how far past SessionLifetime a session's expiry may lie
	// (replicas' clocks differ a little).
	clockSkew = time.Minute
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

// operators reads the store's operator tokens; each request reads them
// anew, so a token made or revoked on any machine counts at once.
func (h *Handler) operators(ctx context.Context) ([]state.OperatorToken, error) {
	s, err := state.ViewValue(ctx, h.Store, func(tx state.Tx) (state.Settings, error) { return tx.Settings(ctx) })
	if err != nil {
		return nil, fmt.Errorf("read the operator tokens: %w", err)
	}
	return s.OperatorTokens(), nil
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
func (h *Handler) allowed(r *http.Request, ops []state.OperatorToken) (access, *refusal) {
	if a, ok := h.session(r, ops); ok {
		return a, nil
	}
	if static(r) {
		return access{}, nil
	}
	if len(ops) == 0 {
		return access{}, &refusal{status: http.StatusForbidden, text: NoOperatorText}
	}
	if r.URL.Path == Prefix+"login" {
		return access{}, nil
	}
	if (r.Method == http.MethodGet || r.Method == http.MethodHead) && !stream(r) {
		return access{}, &refusal{redirect: Prefix + "login?" + url.Values{"next": {r.URL.RequestURI()}}.Encode()}
	}
	return access{}, &refusal{status: http.StatusUnauthorized, text: "log in first: this page needs an operator session (" + Prefix + "login)"}
}

// stillAllowed re-checks, for a long answer (a live stream), that the
// request's session still holds: its token not revoked, its expiry not
// passed. Access is otherwise checked once per request, and a stream
// lasts as long as the browser keeps it open. A store that cannot be read
// ends the stream too: its reconnect is checked afresh.
func (h *Handler) stillAllowed(r *http.Request) bool {
	ops, err := h.operators(r.Context())
	if err != nil {
		return false
	}
	_, ok := h.session(r, ops)
	return ok
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

// A session cookie is "v2.NAME.EXPIRY.KEY": the operator's name, the
// expiry in Unix seconds, and the session key its login derived from the
// token (state.OperatorSessionKey), checked against the hash the store
// keeps (OperatorToken.Session). Nothing in the store makes one: the key
// comes only from the token. Like any bearer cookie, a copy works for its
// holder until the token is revoked; the expiry bounds a browser's.
func newSession(name string, key []byte, expires time.Time) string {
	return "v2." + name + "." + strconv.FormatInt(expires.Unix(), 10) + "." + base64.RawURLEncoding.EncodeToString(key)
}

// session checks r's session cookie against the store's operator tokens.
func (h *Handler) session(r *http.Request, ops []state.OperatorToken) (access, bool) {
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return access{}, false
	}
	name, key, ok := h.verify(c.Value, ops)
	if !ok {
		return access{}, false
	}
	return access{Operator: name, session: c.Value, CSRF: csrfOf(key, c.Value)}, true
}

// verify returns the operator and session key of a session cookie that
// is one of ops' and has not expired.
func (h *Handler) verify(v string, ops []state.OperatorToken) (string, []byte, bool) {
	parts := strings.Split(v, ".")
	if len(parts) != 4 || parts[0] != "v2" || state.ValidateName("operator", parts[1]) != nil {
		return "", nil, false
	}
	exp, err := strconv.ParseInt(parts[2], 10, 64)
	now := h.now()
	if err != nil || exp <= now.Unix() || exp > now.Add(SessionLifetime+clockSkew).Unix() {
		return "", nil, false
	}
	key, err := base64.RawURLEncoding.DecodeString(parts[3])
	if err != nil || len(key) != sha256.Size {
		return "", nil, false
	}
	got := state.SessionHash(key)
	for _, op := range ops {
		if op.Name == parts[1] && op.Session.Valid() {
			return op.Name, key, subtle.ConstantTimeCompare([]byte(op.Session), []byte(got)) == 1
		}
	}
	return "", nil, false
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
	ops, err := h.operators(r.Context())
	if err != nil {
		h.internal(w, r, err)
		return
	}
	next := safeNext(r.PostForm.Get("next"))
	token := strings.TrimSpace(r.PostForm.Get("token"))
	op, ok := state.MatchOperator(ops, token)
	key := state.OperatorSessionKey(token)
	if ok && subtle.ConstantTimeCompare([]byte(op.Session), []byte(state.SessionHash(key))) != 1 {
		ok = false // a hand-edited entry whose session hash is not the token's
	}
	if !ok {
		h.logger().Warn("ui: failed login", "remote", r.RemoteAddr)
		h.render(w, r, http.StatusUnauthorized, "login.html", loginPage{Nonce: nonceOf(r), Title: "Log in", Next: next,
			Error: "That is not a valid operator token (or it was revoked)."})
		return
	}
	expires := h.now().Add(SessionLifetime)
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Value: newSession(op.Name, key, expires), Path: Prefix, Expires: expires,
		MaxAge: int(SessionLifetime / time.Second), HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: overTLS(r)})
	h.logger().Info("ui: operator logged in", "operator", op.Name, "remote", r.RemoteAddr)
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
