// Package policy holds the product's rules, each once, as pure
// functions of the values they judge: the health names, recovery
// (backoff and the circuit breaker), budgets (what a spore or a colony
// spent, and whether that reached a budget), idle sleep, whether a
// message is admitted, the rank relations (who is one rank up), the
// [arch] mycologist's standing (always on, never budget-limited) and
// whether a spore needs a person after a pass acted (NeedsAttention).
//
// Everyone who decides asks it: the pass (reconcile), the changes of a
// wish (reconcile/wish), apply's plan (reconcile/colonyspec), the
// pod-facing API (mycelia), the CLI and the runtimes.
//
// It must never do I/O or read a clock (now is always a parameter), and
// it imports only state and the standard library's value packages:
// nothing that reads the store or observes reality, and nothing of the
// pass. policy_test.go's lints keep it so.
package policy
