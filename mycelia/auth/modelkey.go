package auth

import (
	"context"
	"net/http"
	"strings"
)

// modelKey finds the spore calling the model gateway from the key its
// agent sends: exactly one of x-api-key and a bearer token, holding
// "ID:TOKEN", or the token alone with HeaderSpore naming the id (one of
// them, never both: a key that names an id and a header that names
// another would leave which one is meant to a guess).
func (a Authenticator) modelKey(ctx context.Context, r *http.Request) (Caller, error) {
	keys := r.Header.Values(HeaderModelKey)
	token := bearer(r)
	switch {
	case len(keys) > 1, len(keys) == 1 && r.Header.Values("Authorization") != nil:
		return Caller{}, ErrUnauthorized
	case len(keys) == 1:
		token = keys[0]
	}
	if token == "" {
		return Caller{}, ErrUnauthorized
	}
	ids := r.Header.Values(HeaderSpore)
	id, tok, named := strings.Cut(token, ":")
	switch {
	case named && len(ids) == 0:
		return a.checkSpore(ctx, SporeModelKey, id, tok, "")
	case !named && len(ids) == 1:
		return a.checkSpore(ctx, SporeModelKey, ids[0], token, "")
	}
	return Caller{}, ErrUnauthorized
}
