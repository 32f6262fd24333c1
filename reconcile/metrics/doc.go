// Package metrics defines sporectl's Prometheus families, once, for both
// places that expose them (docs/metrics.md): serve's GET /metrics and
// `reconcile --metrics-file` (node_exporter's textfile format).
//
// It owns:
//   - the fleet's families, built from a pass's outcome (Fleet): spores by
//     colony, rank and effective health, the outboxes, ingest lag, tokens
//     and cost today, from the store and the observation the pass made —
//     what both places expose;
//   - a reconcile run's families (Run): how long it took, what it
//     delivered, which breakers it opened — the textfile's;
//   - serve's process counters (Process): messages sent, refused and
//     delivered, the time from send to delivery, breaker opens and pass
//     durations — counted in the process, so they start again at zero
//     when serve restarts;
//   - the /metrics handler (Handler): an operator's bearer token, then one
//     read-only pass per scrape;
//   - writing a textfile atomically (WriteFile).
//
// No family carries a spore id: the number of series grows with the
// colonies and the routes, never with the spores (docs/metrics.md
// "Cardinality"). It never writes the store itself; the read-only pass a
// scrape runs writes what it learned, as every command's does.
package metrics
