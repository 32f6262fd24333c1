// Package gateway is serve's model gateway (docs/gateway.md): it answers
// the Anthropic Messages API under /model/ for the spores, forwards each
// call to the upstream with the model key that only serve holds, and
// counts each call's usage, from the upstream's own answer, into the
// calling spore's record (state.CountModelCall) before it hands the part
// of the answer that carries it to the spore. So the key never enters a
// spore, and the spend budgets judge is what the gateway counted, not
// what a spore's bridge says.
//
// A call is let through only for a spore that proves itself with its own
// token (mycelia/auth SporeModelKey), is meant to be running, is under
// its own and its colony's daily budget (reconcile/policy) and under its
// rate of calls per minute (state.Settings.ModelCallRate, per serve
// process). Every refusal is answered in the Messages API's error shape
// and nothing of it reaches the upstream.
//
// It keeps nothing of its own but the rate limiter's buckets and a
// shared read of the fleet (at most SharedFleetAge old): any number of
// serve replicas answer for one store, each call counted once by its
// upstream message id.
//
// It must never let the key, or a spore's token, reach a log line, an
// error, an answer, a metric or the upstream (the spore's credential
// headers are stripped), never pass on an answer's usage before it is
// counted, and never buffer a streamed answer whole.
package gateway
