package cli

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestInitAPIURLSaysRunningSporesKeepTheOld: changing an existing store's
// API URL says (stderr, exit 0) that spores running now keep the old one
// until they start again, and how to start one again; the same URL
// again, or a new store, says nothing of it.
func TestInitAPIURLSaysRunningSporesKeepTheOld(t *testing.T) {
	c := newFakeColony(t)
	r := c.run("", "init", "--api-url", "https://serve.example:8443")
	require.Equal(t, ExitOK, r.code, r.err)
	require.Contains(t, r.out, "configured")
	require.Contains(t, r.err, "note: the API URL is now https://serve.example:8443 (was the default). Spores running now keep the old one until they start again: "+
		"'sporectl sleep ID' then 'sporectl wake ID' starts one again with the new URL.\n")

	r = c.run("", "init", "--api-url", "https://serve.example:8443")
	require.Equal(t, ExitOK, r.code, r.err)
	require.NotContains(t, r.err, "API URL is now")

	r = c.run("", "init", "--api-url", "http://10.0.0.5:7070")
	require.Equal(t, ExitOK, r.code, r.err)
	require.Contains(t, r.err, "note: the API URL is now http://10.0.0.5:7070 (was https://serve.example:8443).")

	fresh := &fakeColony{t: t, store: filepath.Join(t.TempDir(), "store"), rt: c.rt, now: testNow}
	r = fresh.run("", "init", "--api-url", "http://10.0.0.5:7070", "--agent", "echo")
	require.Equal(t, ExitOK, r.code, r.err)
	require.Contains(t, r.out, "created")
	require.NotContains(t, r.err, "API URL is now")
}
