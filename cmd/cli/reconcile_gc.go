package cli

import "runtime/debug"

// batchGCPercent is the garbage collector's target (GOGC) for the pass of
// a `reconcile` that runs once and exits. A pass over 10,000 spores
// allocates about 85 MB, most of it short-lived rows, and at the default
// of 100 the collector ran a tenth of a no-op pass's CPU; the process
// ends right after, so a heap allowed to grow further is not kept
// (docs/performance.md "A no-op reconcile at 10,000"). `reconcile
// --every`, which lives on, and every other command keep the default.
const batchGCPercent = 200

// batchGC sets batchGCPercent for one pass and returns what sets back
// the target it replaced. GOGC in the environment is the operator's
// choice and wins.
func (o *reconcileOptions) batchGC() (restore func()) {
	if o.f.Getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(batchGCPercent)
	return func() { debug.SetGCPercent(old) }
}
