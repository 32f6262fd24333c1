package cli

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"
)

// gcPercent is the collector's target now.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// A single pass runs with the batch target and sets back the one before
// it; GOGC in the environment is left to rule.
func TestBatchGCIsOnePassAndLeavesGOGCAlone(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	f := NewFactory(IOStreams{})
	env := map[string]string{}
	f.Getenv = func(k string) string { return env[k] }
	o := &reconcileOptions{f: f}

	restore := o.batchGC()
	require.Equal(t, batchGCPercent, gcPercent())
	restore()
	require.Equal(t, 100, gcPercent())

	env["GOGC"] = "50"
	restore = o.batchGC()
	require.Equal(t, 100, gcPercent(), "GOGC set: the target is the operator's")
	restore()
	require.Equal(t, 100, gcPercent())
}
