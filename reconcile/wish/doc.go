// Package wish owns every change of a spore's wish — what people,
// mycologists and the store's own rules ask of it — and the rules that
// decide them: wake, sleep and stop (and the [arch] mycologist, which is
// always on), reset (close the breaker), token rotation, the loop, a
// spore's swarm, role and spec as apply sets them (its rank fixed at
// create), create (one [arch] per store, one colony mycologist per
// colony, one [swarm] mycologist per swarm) and delete.
//
// Each transition writes, in the caller's read-write transaction, the
// spore's record, its generation one higher where the wish changed, and
// the event that says so. It is the only code that bumps a generation
// (generation_test.go keeps it so): a pass that re-reads a record inside
// its commit knows a newer wish by its generation (reconcile/commit.go),
// so every path that changes a wish must bump it the same way. The
// callers (cmd/cli's verbs, reconcile's upkeep, reconcile/outbox for a
// message from a person, serve's routes or a summons) choose when; this
// package says what is written.
//
// It must never open a transaction of its own (the caller's commits the
// wish with whatever else it writes, or nothing), observe or start
// anything, or import reconcile, mycelia or cmd/cli: reconcile and
// mycelia call it.
package wish
