// Package auth decides who a request to `sporectl serve` is, for all four
// of its surfaces: the pod API (mycelia: a spore, by its id and token), the
// model gateway (mycelia/gateway: a spore, by "ID:TOKEN" where its agent
// sends a model key), the
// operators' page (mycelia/ui: an operator, by the session cookie a login
// with an operator token made) and GET /metrics (reconcile/metrics: an
// operator, by an operator token as a bearer token). One function,
// Authenticator.Who, looks at the one kind of credential a surface takes
// and answers with the caller or ErrUnauthorized; each surface then
// answers in its own form (a JSON error, a page, a plain 401) and decides
// what the caller may do (ranks, reach, an asleep caller).
//
// Every credential is checked against the store alone (a hash of each
// token, never the token), so any number of serve replicas agree and a
// token made or revoked on any machine counts at once. Comparisons take
// the same time whatever was wrong (docs/security.md).
//
// It imports only state, so that the surfaces below the pod API
// (reconcile/metrics) use it without importing the API. It must never let
// a token reach a log line, an error or an answer, tell a caller which
// part of a credential was wrong, or accept one kind of credential where
// another was asked for (a spore's token never opens an operator's
// surface, nor an operator's a spore's).
package auth
