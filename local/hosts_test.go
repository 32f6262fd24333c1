package local

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/mycelia"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// TestHostsAndHostLogs: a real bridge is listed with its processes, CPU
// time and resident memory, and its log is read, tail bounded; nothing
// of its environment (where the tokens are) is read out.
func TestHostsAndHostLogs(t *testing.T) {
	ctx := context.Background()
	r := newRuntime(t, "echo")
	t.Cleanup(func() { _ = r.Delete(ctx, "hosty", true) })
	require.NoError(t, r.Start(ctx, spore("hosty"), reconcile.Launch{Creds: creds}))
	waitReady(t, r, "hosty")

	l, err := r.Hosts(ctx)
	require.NoError(t, err)
	require.Equal(t, "local", l.Runtime)
	require.Contains(t, l.Metrics, "not a rate")
	require.Len(t, l.Hosts, 1)
	h := l.Hosts[0]
	require.Equal(t, "bridge of hosty", h.Name)
	require.Equal(t, "hosty", h.Spore)
	require.Equal(t, "Running", h.State)
	require.GreaterOrEqual(t, h.Processes, 1)
	require.NotNil(t, h.MemoryBytes)
	require.Greater(t, *h.MemoryBytes, int64(0))
	require.NotNil(t, h.CPUSeconds)
	require.GreaterOrEqual(t, *h.CPUSeconds, 0.0)
	require.False(t, h.Started.IsZero())

	// The bridge's log, as the file holds it, bounded by tail.
	for _, line := range []string{"first extra line", "second extra line", "third extra line"} {
		f, err := os.OpenFile(r.runPath("hosty", ".log"), os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString(line + "\n")
		require.NoError(t, err)
		require.NoError(t, f.Close())
	}
	whole, err := os.ReadFile(r.runPath("hosty", ".log"))
	require.NoError(t, err)
	text, err := r.HostLogs(ctx, "bridge of hosty", mycelia.MaxHostTail)
	require.NoError(t, err)
	require.Equal(t, string(whole), text)
	text, err = r.HostLogs(ctx, "hosty", 2)
	require.NoError(t, err)
	require.Equal(t, "second extra line\nthird extra line\n", text)

	// A token its agent printed on stderr is redacted, as in `sporectl logs`.
	f, err := os.OpenFile(r.runPath("hosty", ".log"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("agent: key " + creds.APIToken + " and " + creds.BridgeToken + "\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	leaked, err := r.HostLogs(ctx, "hosty", 1)
	require.NoError(t, err)
	require.Equal(t, "agent: key [redacted] and [redacted]\n", leaked)

	for _, leak := range []string{creds.APIToken, creds.BridgeToken} {
		require.NotContains(t, text, leak)
		for _, h := range l.Hosts {
			require.NotContains(t, h.Name+h.Spore+h.State, leak)
		}
	}

	for _, name := range []string{"bridge of ghost", "ghost", "../run/hosty", "bridge of Hosty"} {
		_, err := r.HostLogs(ctx, name, 10)
		require.True(t, errors.Is(err, state.ErrNotFound), "%s: %v", name, err)
	}
	require.False(t, strings.Contains(text, "SPORECTL_SPORE_ID="), "no environment is read out")
}
