package state

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
)

// TokenHash is the only form in which a spore's API token is kept at rest:
// the hex SHA-256 of the token. Tokens are 32 random bytes, so a plain hash
// is enough; there is nothing to brute-force.
type TokenHash string

// NewToken returns a fresh token and its hash. The plaintext must go only
// to the spore (its Secret or home) and never into a log, view or error.
func NewToken() (token string, hash TokenHash, err error) {
	return newToken("spt_")
}

// NewOperatorToken returns a fresh operator token (a person's login to
// the page, docs/security.md) and its hash. Its prefix tells it from a
// spore's token at a glance; both are 256 random bits. The plaintext is
// shown once to the person who made it and kept nowhere.
func NewOperatorToken() (token string, hash TokenHash, err error) {
	return newToken(OperatorTokenPrefix)
}

// OperatorSessionKey is the key a login derives from an operator token
// to prove its sessions: the session cookie carries it, and the store
// keeps only its hash (OperatorToken.Session, SessionHash). So whoever can
// read the store — a read-only role, a backup, a copy — can neither log
// in nor make a session; only a login with the token can.
func OperatorSessionKey(token string) []byte {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("sporectl operator session v1"))
	return m.Sum(nil)
}

// SessionHash is the stored form of an operator's session key.
func SessionHash(key []byte) TokenHash {
	sum := sha256.Sum256(key)
	return TokenHash(hex.EncodeToString(sum[:]))
}

// OperatorTokenPrefix starts every operator token.
const OperatorTokenPrefix = "spo_"

func newToken(prefix string) (string, TokenHash, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", "", fmt.Errorf("generate token: %w", err)
	}
	token := prefix + base64.RawURLEncoding.EncodeToString(b)
	return token, HashToken(token), nil
}

// HashToken hashes a presented token for storage or comparison.
func HashToken(token string) TokenHash {
	sum := sha256.Sum256([]byte(token))
	return TokenHash(hex.EncodeToString(sum[:]))
}

// Matches compares a presented token with the stored hash in constant time.
func (h TokenHash) Matches(token string) bool {
	got := HashToken(token)
	return len(h) == len(got) && subtle.ConstantTimeCompare([]byte(h), []byte(got)) == 1
}

// Valid reports whether h looks like a stored hash (64 lowercase hex).
func (h TokenHash) Valid() bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
