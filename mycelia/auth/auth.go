package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sporectl/sporectl/state"
)

// Credential is the kind of credential a surface takes. Each surface takes
// exactly one; Who looks at no other, so a credential of another kind is
// as good as none there.
type Credential uint8

const (
	// SporeToken is a spore's: the headers HeaderSpore (its id) and
	// "Authorization: Bearer <token>", checked against the spore's stored
	// hash. The pod API takes it.
	SporeToken Credential = iota + 1
	// OperatorToken is an operator token as "Authorization: Bearer
	// <token>", checked against the stored operator tokens. GET /metrics
	// takes it.
	OperatorToken
	// OperatorSession is the page's session cookie (SessionCookie), made
	// by a login with an operator token (Login). The page takes it.
	OperatorSession
	// SporeModelKey is a spore's token as its agent sends it to the model
	// gateway (mycelia/gateway), in the place a model key goes: "ID:TOKEN"
	// (its id, a colon, its token) as the header "x-api-key" or as
	// "Authorization: Bearer ID:TOKEN"; or the token alone there with
	// HeaderSpore naming the id. Checked as SporeToken is, against the
	// spore's stored hash.
	SporeModelKey
)

// HeaderModelKey is where Claude Code sends its model key (the
// Messages API's header): SporeModelKey's first place.
const HeaderModelKey = "X-Api-Key"

// HeaderSpore names the calling spore; its token must match the hash
// stored for that id.
const HeaderSpore = "X-Sporectl-Spore"

// ErrUnauthorized is every refusal of a credential, whatever was wrong
// (none, two, another scheme, an unknown id, a wrong or revoked token, an
// expired session), so nothing is learnt from it.
var ErrUnauthorized = errors.New("unauthorized")

// ErrNoOperator is ErrUnauthorized (errors.Is) for an operator's
// credential while the store holds no operator token: nobody can be let
// in until one is made. The page says how; /metrics answers its 401.
var ErrNoOperator = fmt.Errorf("%w: the store has no operator token", ErrUnauthorized)

// Authenticator checks credentials against Store. Its zero Now is
// time.Now. It holds no state: a value is as good as a pointer, and
// serve hands the same one to its three surfaces.
type Authenticator struct {
	Store state.Store
	// Now is the clock of sessions' expiry (default time.Now).
	Now func() time.Time
}

// Want is what a surface asks Who for.
type Want struct {
	// Kind is the one kind of credential the surface takes.
	Kind Credential
	// Also, for SporeToken only, when not "", is a spore the call is
	// about, read in the same View as the caller into Caller.Also, so a
	// call about one spore opens one View, not two.
	Also string
}

// Caller is who a request proved to be.
type Caller struct {
	// Kind is the credential that proved it.
	Kind Credential
	// Spore is the calling spore's record (SporeToken): its rank, its
	// desired state. Whether it may act is the surface's to say.
	Spore state.Spore
	// Operator is the operator's name (OperatorToken, OperatorSession).
	Operator string
	// Session is the session that proved it (OperatorSession).
	Session Session
	// Also is Want.Also's read (SporeToken).
	Also Also
}

// Also is a spore read with the caller.
type Also struct {
	ID    string // the spore read; "" when none was
	Spore state.Spore
	Err   error // nil, or the read's state.ErrNotFound
}

// Who decides who r is, from the one kind of credential want names:
// the caller, ErrUnauthorized (ErrNoOperator when the store holds no
// operator token), or the store's error wrapped (the surface answers
// 503 or 500: without the store nobody is let in).
func (a Authenticator) Who(ctx context.Context, r *http.Request, want Want) (Caller, error) {
	switch want.Kind {
	case SporeToken:
		return a.spore(ctx, r, want.Also)
	case SporeModelKey:
		return a.modelKey(ctx, r)
	case OperatorToken:
		return a.operatorToken(ctx, r)
	case OperatorSession:
		return a.session(ctx, r)
	}
	return Caller{}, fmt.Errorf("authenticate: no such kind of credential (%d)", want.Kind)
}

// bearer is the token of r's one "Authorization: Bearer <token>" header,
// as sent ("" when there is not exactly one such header).
func bearer(r *http.Request) string {
	auths := r.Header.Values("Authorization")
	if len(auths) != 1 {
		return ""
	}
	scheme, token, ok := strings.Cut(auths[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return token
}

func (a Authenticator) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}
