package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/sporectl/sporectl/state"
)

// An operator's session (docs/security.md "Operator tokens", docs/page.md
// "Access") is a cookie that names the operator and its expiry, with the
// key its login derived from the token: any serve replica checks it
// against the store alone, and revoking (or replacing) the token ends
// every session it made.

const (
	// SessionCookie holds an operator's session.
	SessionCookie = "sporectl_session"
	// SessionLifetime bounds a session: log in again after it.
	SessionLifetime = 12 * time.Hour
	// clockSkew is how far past SessionLifetime a session's expiry may lie
	// (replicas' clocks differ a little).
	clockSkew = time.Minute
)

// Session is an operator's proven session.
type Session struct {
	Operator string
	// Value is the cookie's value; it never goes into a page or a log.
	Value string
	// Key is the session key its login derived from the token: the page
	// keys its CSRF tokens with it.
	Key     []byte
	Expires time.Time
}

// SessionValue is a session cookie's value, "v2.NAME.EXPIRY.KEY": the
// operator's name, the expiry in Unix seconds, and the session key its
// login derived from the token (state.OperatorSessionKey), checked against
// the hash the store keeps (OperatorToken.Session). Nothing in the store
// makes one: the key comes only from the token. Like any bearer cookie, a
// copy works for its holder until the token is revoked; the expiry bounds
// a browser's.
func SessionValue(name string, key []byte, expires time.Time) string {
	return "v2." + name + "." + strconv.FormatInt(expires.Unix(), 10) + "." + base64.RawURLEncoding.EncodeToString(key)
}

// verify returns the session of a cookie's value v that is one of ops'
// and has not expired at now.
func verify(v string, ops []state.OperatorToken, now time.Time) (Session, bool) {
	parts := strings.Split(v, ".")
	if len(parts) != 4 || parts[0] != "v2" || state.ValidateName("operator", parts[1]) != nil {
		return Session{}, false
	}
	exp, err := strconv.ParseInt(parts[2], 10, 64)
	if err != nil || exp <= now.Unix() || exp > now.Add(SessionLifetime+clockSkew).Unix() {
		return Session{}, false
	}
	key, err := base64.RawURLEncoding.DecodeString(parts[3])
	if err != nil || len(key) != sha256.Size {
		return Session{}, false
	}
	got := state.SessionHash(key)
	for _, op := range ops {
		if op.Name == parts[1] && op.Session.Valid() {
			ok := subtle.ConstantTimeCompare([]byte(op.Session), []byte(got)) == 1
			return Session{Operator: op.Name, Value: v, Key: key, Expires: time.Unix(exp, 0)}, ok
		}
	}
	return Session{}, false
}
