package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state/statetest"
)

// A damaged line of one spore's log: status and list go on for the rest
// (the damaged spore Error, named), repair --dry-run writes nothing,
// repair sets the line aside and leaves check clean.
func TestRepairSetsDamageAsideAndStatusGoesOn(t *testing.T) {
	store := fixtureToDamage(t)
	logs, err := filepath.Glob(filepath.Join(store, "events", "worker-7.*.log"))
	require.NoError(t, err)
	require.Len(t, logs, 1)
	b, err := os.ReadFile(logs[0])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(logs[0], bytes.Replace(b, []byte("Paused"), []byte("Active"), 1), 0o600))

	r := run(t, store, "status", "-o", "json")
	require.NotEqual(t, ExitCorrupt, r.code, "one spore's damage is not the fleet's: %s", r.err)

	before := treeHash(t, store)
	r = run(t, store, "repair", "worker-7", "--dry-run")
	require.Equal(t, ExitOK, r.code, r.err)
	require.Contains(t, r.out, "would replace 1 line(s)")
	require.Contains(t, r.out, filepath.Base(logs[0])+":1")
	require.Equal(t, before, treeHash(t, store), "a dry run writes nothing")

	r = run(t, store, "repair", "worker-7", "-o", "json")
	require.Equal(t, ExitOK, r.code, r.err)
	require.Contains(t, r.out, `"replaced": 1`)
	require.Contains(t, r.out, `"damaged/`+filepath.Base(logs[0])+".")
	kept, err := filepath.Glob(filepath.Join(store, "damaged", filepath.Base(logs[0])+".*"))
	require.NoError(t, err)
	require.Len(t, kept, 1, "the old log is kept under damaged/")
	statetest.CheckDirOnCleanup(t, store)
	require.Equal(t, ExitOK, run(t, store, "check").code)
	out := mustRun(t, store, "events", "worker-7")
	require.Contains(t, out, "repaired")
	require.True(t, strings.Contains(out, "could not be read (checksum mismatch"), out)

	r = run(t, store, "repair", "nobody")
	require.Equal(t, ExitNotFound, r.code)
}
