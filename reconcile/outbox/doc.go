// Package outbox owns recording a message: a person's prompt (`sporectl
// prompt`, the page's prompt box), a message between spores (serve's
// routes), a swarm loop's prompt and a summons all go through it. A
// message is recorded in one transaction (Send, SendOnce) or in the
// caller's (Record): admitted or refused (admit.go: one admission, one
// over-budget judgement), its text framed with the sender's mark and
// checked against the bridge's bound (mark.go, framed.go), recognised
// when a sender says it twice (once.go), charged to a sending spore
// within its rate limit (ratelimit.go), the target woken to deliver it
// (reconcile/wish's WakeToDeliver), then its event in the target's log
// and its entry in the target's outbox (record.go).
//
// Delivering it is the pass's (reconcile's Pass.Deliver): this package
// never observes, dials a bridge or starts anything, and never imports
// reconcile, which calls it (imports_test.go keeps it so).
package outbox
