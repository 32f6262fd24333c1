// Package mycelia is the pod-facing API: what `sporectl serve` answers and
// what the in-pod `mycologist` and `swarm` commands call
// (docs/mycologists.md). It owns the routes and their one table, ranks
// and reach, the marking of messages with their sender, and the client.
// Who a caller is (its spore id and token against the hash in the store)
// mycelia/auth decides, as it does for serve's page and /metrics.
//
// It holds no state: every request reads the store, every accepted
// message is one transaction on it (outbox.SendOnce) before the answer,
// and delivery is the pass's (reconcile.Pass.Deliver), now when the target
// is awake and otherwise by the next reconcile. Any number of servers may
// answer for one store; killing one loses nothing a client was told.
//
// It must never trust what a caller says about itself (rank, colony,
// swarm and role come from the store), never read a body before the caller
// is authenticated, never write anything for a request it refuses, and
// never let a token reach a log line, an error or an answer.
package mycelia
