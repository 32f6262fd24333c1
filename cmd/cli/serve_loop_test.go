package cli

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/internal/testutil"
	"github.com/sporectl/sporectl/state"
)

// TestServeRefusesAnAddressItCouldNeverListenOn: a port out of range or
// an address that does not parse is the command line's fault (2), found
// before serve listens, not a failed listen (15).
func TestServeRefusesAnAddressItCouldNeverListenOn(t *testing.T) {
	c := newFakeColony(t)
	for _, tc := range []struct{ addr, msg string }{
		{"127.0.0.1:99999", "the port must be a number from 0 to 65535"},
		{"127.0.0.1:65536", "the port must be a number from 0 to 65535"},
		{"127.0.0.1:-1", "the port must be a number from 0 to 65535"},
		{"127.0.0.1:http", "the port must be a number from 0 to 65535"},
		{"127.0.0.1:07070", "the port must be a number from 0 to 65535"},
		{"127.0.0.1:", "the port must be a number from 0 to 65535"},
		{"127.0.0.1", "want host:port"},
		{"[::1:7070", "want host:port"},
		{"bad_host!:7070", "neither an IP address nor a host name"},
	} {
		r := c.run("", "serve", "--addr", tc.addr)
		require.Equal(t, ExitUsage, r.code, "%s: %s", tc.addr, r.err)
		require.Contains(t, r.err, tc.msg, tc.addr)
		require.Contains(t, r.err, "--addr", tc.addr)
	}
}

func TestServeFlagReconcileEvery(t *testing.T) {
	f := NewFactory(IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
	var got *serveOptions
	cmd := newCmdServe(f, func(_ context.Context, o *serveOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--reconcile-every", "30s"})
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	require.NoError(t, cmd.Execute())
	require.Equal(t, 30*time.Second, got.ReconcileEvery)
	c := newFakeColony(t)
	for _, v := range []string{"-1s", "soon"} {
		r := c.run("", "serve", "--reconcile-every", v)
		require.Equal(t, ExitUsage, r.code, "%s: %s", v, r.err)
		require.Contains(t, r.err, "--reconcile-every", v)
	}
}

// TestAPIURLMismatch: what serve compares of the store's api-url and its
// own address (docs/cli.md, serve's row), local runtime only.
func TestAPIURLMismatch(t *testing.T) {
	local := func(api string) state.Settings { return state.Settings{Runtime: "local", APIURL: api} }
	for _, tc := range []struct {
		name   string
		s      state.Settings
		listen string
		tls    bool
		why    string
	}{
		{"the default on the default", local(""), "127.0.0.1:7070", false, ""},
		{"the default, another port", local(""), "127.0.0.1:8080", false, "its port is 7070, serve listens on 8080"},
		{"localhost and 127.0.0.1 are one loopback", local("http://localhost:7070"), "127.0.0.1:7070", false, ""},
		{"::1 and localhost", local("http://localhost:7070"), "[::1]:7070", false, ""},
		{"names in any case", local("http://Box.Lan:7070"), "box.lan:7070", true, "its scheme is http, serve speaks https"},
		{"every interface answers any host", local("http://10.0.0.5:7070"), "0.0.0.0:7070", false, ""},
		{"every interface, v6", local("http://box.lan:7070"), "[::]:7070", false, ""},
		{"an empty host is every interface", local("http://box.lan:7070"), ":7070", false, ""},
		{"another host", local("http://10.0.0.5:7070"), "127.0.0.1:7070", false, "its host is 10.0.0.5, serve listens on 127.0.0.1 only"},
		{"the scheme's port", local("https://box.lan"), "0.0.0.0:443", true, ""},
		{"http without a port is 80", local("http://box.lan"), "0.0.0.0:7070", false, "its port is 80, serve listens on 7070"},
		{"https to plain serve", local("https://127.0.0.1:7070"), "127.0.0.1:7070", false, "its scheme is https, serve speaks http"},
		{"kubernetes has a Service between", state.Settings{Runtime: "kube", APIURL: "http://sporectl-api.ns.svc"}, "0.0.0.0:7070", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.why, apiURLMismatch(tc.s, tc.listen, tc.tls))
		})
	}
}

// TestServeReconcileEvery: serve --reconcile-every heals in its own
// process, says it warns of an api-url that does not reach it, and stops
// with serve (exit 0).
func TestServeReconcileEvery(t *testing.T) {
	c := newFakeColony(t)
	c.ok("create", "a", "--wake")
	var errOut testutil.Buffer
	f := c.factory(strings.NewReader(""), io.Discard, &errOut)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- RunWith(ctx, f, []string{"serve", "--addr", "127.0.0.1:0", "--reconcile-every", "10ms", "--address-check", "fallback"})
	}()
	waitFor(t, func() bool { return strings.Count(errOut.String(), "Z reconcile: ") >= 2 }, "two passes")
	require.Contains(t, errOut.String(), "warning: spores are told to reach serve at http://127.0.0.1:7070 (the store's api-url), but its port is 7070, serve listens on ")
	c.rt.Kill("a", "Exited")
	waitFor(t, func() bool { return strings.Contains(errOut.String(), "a restart: after Exited") }, "serve's loop to restart a")
	cancel()
	select {
	case code := <-done:
		require.Equal(t, ExitOK, code, errOut.String())
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
}
