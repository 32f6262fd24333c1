package auth

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"

	"github.com/sporectl/sporectl/state"
)

// operators reads the store's operator tokens; each request reads them
// anew, so a token made or revoked on any machine counts at once.
func (a Authenticator) operators(ctx context.Context) ([]state.OperatorToken, error) {
	s, err := state.ViewValue(ctx, a.Store, func(tx state.Tx) (state.Settings, error) { return tx.Settings(ctx) })
	if err != nil {
		return nil, fmt.Errorf("read the operator tokens: %w", err)
	}
	return s.OperatorTokens(), nil
}

// operatorToken finds the operator whose token r presents as its bearer
// token. The operator tokens are read first, whatever r carries: a store
// that cannot be read lets nobody in, and says so to everyone.
func (a Authenticator) operatorToken(ctx context.Context, r *http.Request) (Caller, error) {
	token := strings.TrimSpace(bearer(r))
	ops, err := a.operators(ctx)
	if err != nil {
		return Caller{}, err
	}
	switch {
	case token == "":
		return Caller{}, ErrUnauthorized
	case len(ops) == 0:
		return Caller{}, ErrNoOperator
	}
	op, ok := state.MatchOperator(ops, token)
	if !ok {
		return Caller{}, ErrUnauthorized
	}
	return Caller{Kind: OperatorToken, Operator: op.Name}, nil
}

// session finds the operator whose session r's cookie proves.
func (a Authenticator) session(ctx context.Context, r *http.Request) (Caller, error) {
	ops, err := a.operators(ctx)
	if err != nil {
		return Caller{}, err
	}
	if c, err := r.Cookie(SessionCookie); err == nil {
		if s, ok := verify(c.Value, ops, a.now()); ok {
			return Caller{Kind: OperatorSession, Operator: s.Operator, Session: s}, nil
		}
	}
	if len(ops) == 0 {
		return Caller{}, ErrNoOperator
	}
	return Caller{}, ErrUnauthorized
}

// Login makes a session for the operator whose token a person typed into
// the page's login form (trimmed by the page): ErrUnauthorized for a
// token that is none of the store's (or whose stored session hash is not
// the token's: a hand-edited entry), else the session, expiring
// SessionLifetime from now, whose Value the page sets as its cookie.
func (a Authenticator) Login(ctx context.Context, token string) (Session, error) {
	ops, err := a.operators(ctx)
	if err != nil {
		return Session{}, err
	}
	op, ok := state.MatchOperator(ops, token)
	key := state.OperatorSessionKey(token)
	if ok && subtle.ConstantTimeCompare([]byte(op.Session), []byte(state.SessionHash(key))) != 1 {
		ok = false // a hand-edited entry whose session hash is not the token's
	}
	if !ok {
		return Session{}, ErrUnauthorized
	}
	expires := a.now().Add(SessionLifetime)
	return Session{Operator: op.Name, Value: SessionValue(op.Name, key, expires), Key: key, Expires: expires}, nil
}
