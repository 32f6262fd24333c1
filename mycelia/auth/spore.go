package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/sporectl/sporectl/state"
)

// spore finds the calling spore from its id and token: one View reads its
// record and stored hash (and want.Also), then the token is compared.
// Nothing is read for a request without one id and one bearer token.
func (a Authenticator) spore(ctx context.Context, r *http.Request, also string) (Caller, error) {
	ids := r.Header.Values(HeaderSpore)
	token := bearer(r)
	if len(ids) != 1 || token == "" {
		return Caller{}, ErrUnauthorized
	}
	return a.checkSpore(ctx, SporeToken, ids[0], token, also)
}

// checkSpore proves id by token: one View reads its record and stored
// hash (and also), then the token is compared.
func (a Authenticator) checkSpore(ctx context.Context, kind Credential, id, token, also string) (Caller, error) {
	if state.ValidateID(id) != nil {
		return Caller{}, ErrUnauthorized
	}
	c := Caller{Kind: kind}
	var hash state.TokenHash
	err := a.Store.View(ctx, func(tx state.Tx) error {
		var err error
		if c.Spore, err = tx.Spore(ctx, id); err != nil {
			return err
		}
		if hash, err = tx.TokenHash(ctx, id); err != nil || also == "" {
			return err
		}
		t, err := tx.Spore(ctx, also)
		if err != nil && !errors.Is(err, state.ErrNotFound) {
			return err
		}
		c.Also = Also{ID: also, Spore: t, Err: err}
		return nil
	})
	if errors.Is(err, state.ErrNotFound) {
		// Hash anyway, so an unknown id takes as long as a wrong token.
		_ = noHash.Matches(token)
		return Caller{}, ErrUnauthorized
	}
	if err != nil {
		return Caller{}, fmt.Errorf("read the calling spore's record: %w", err)
	}
	if !hash.Matches(token) {
		return Caller{}, ErrUnauthorized
	}
	return c, nil
}

// noHash is compared against when there is no stored hash.
var noHash = state.HashToken("")
