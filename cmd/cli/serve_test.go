package cli

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/internal/testutil"
	"github.com/sporectl/sporectl/mycelia"
	"github.com/sporectl/sporectl/mycelia/ui"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// isLoopback takes a host name in any letter case (names are not case
// sensitive), and only the loopback ones.
func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "LOCALHOST": true, "LocalHost": true,
		"127.0.0.1": true, "127.0.0.2": true, "::1": true, "::ffff:127.0.0.1": true,
		"": false, "0.0.0.0": false, "::": false, "10.0.0.1": false, "198.19.77.1": false,
		"example.com": false, "localhost.example.com": false, "notlocalhost": false, "localhost:7070": false,
	} {
		require.Equal(t, want, isLoopback(host), "%q", host)
	}
}

// TestServeFleetShare: one --fleet-share for the page's fleet and the
// API's list, whose defaults agree; its 0 is "only while a read runs".
func TestServeFleetShare(t *testing.T) {
	require.Equal(t, ui.DefaultFleetShare, mycelia.DefaultSporesShare)
	for flag, want := range map[time.Duration]time.Duration{ui.DefaultFleetShare: ui.DefaultFleetShare, 3 * time.Second: 3 * time.Second, 0: -1} {
		o := &serveOptions{FleetShare: flag}
		require.Equal(t, want, o.fleetShare(), "--fleet-share %s", flag)
	}
}

func TestServeFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
		msg  string
	}{
		{nil, true, ""},
		{[]string{"--addr", "localhost:7070"}, true, ""},
		{[]string{"--addr", "LocalHost:7070"}, true, ""},
		{[]string{"--addr", "[::1]:7070"}, true, ""},
		{[]string{"--addr", "127.0.0.2:7070"}, true, ""},
		{[]string{"--addr", ":7070"}, false, "not a loopback address"},
		{[]string{"--addr", "0.0.0.0:8080"}, false, "not a loopback address"},
		{[]string{"--addr", "example.com:8080"}, false, "not a loopback address"},
		{[]string{"--addr", ":8080", "--insecure-listen"}, true, ""},
		{[]string{"--addr", ":8443", "--tls-cert", "c.pem", "--tls-key", "k.pem"}, true, ""},
		{[]string{"--tls-cert", "c.pem"}, false, "go together"},
		{[]string{"--addr", "7070"}, false, "want host:port"},
		{[]string{"--follow-woken", "-1s"}, false, "--follow-woken"},
		{[]string{"--fleet-share", "-1s"}, false, "--fleet-share"},
		{[]string{"--fleet-share", "0"}, true, ""},
		{[]string{"--rate-limit", "-1"}, false, "--rate-limit"},
		{[]string{"--rate-limit", "0"}, true, ""},
		{[]string{"extra"}, false, "unknown command"},
		{[]string{"--model-upstream", "http://127.0.0.1:9/api"}, true, ""},
		{[]string{"--model-upstream", "ftp://example.com"}, false, "--model-upstream"},
		{[]string{"--model-upstream", "https://user:secret@"}, false, "--model-upstream"},
		{[]string{"--model-key-file", "/nonexistent/key"}, false, "--model-key-file"},
		{[]string{"--model-key-file", emptyFile(t)}, false, "--model-key-file"},
	} {
		var got *serveOptions
		f := NewFactory(IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
		cmd := newCmdServe(f, func(_ context.Context, o *serveOptions) error { got = o; return nil })
		cmd.SetArgs(tc.args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		err := cmd.Execute()
		if tc.ok {
			require.NoError(t, err, "%v", tc.args)
			require.NotNil(t, got)
			continue
		}
		require.Error(t, err, "%v", tc.args)
		require.Contains(t, err.Error(), tc.msg, "%v", tc.args)
		require.NotContains(t, err.Error(), "secret", "a URL's password is never shown")
		require.Equal(t, ExitUsage, exitCode(err), "%v: %v", tc.args, err)
	}
}

// TestServeCommand runs `serve` in-process over a fake colony: it
// answers, accepts a summons, logs no token, and stops on its context.
func TestServeCommand(t *testing.T) {
	c := newFakeColony(t)
	c.ok("create", "myco", "--rank", "colony", "--colony", "lab")
	c.ok("create", "a", "--colony", "lab", "--wake")
	tok, hash, err := state.NewToken()
	require.NoError(t, err)

	var errOut testutil.Buffer
	f := NewFactory(IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: &errOut})
	f.Getenv = func(k string) string {
		if k == EnvStore {
			return c.store
		}
		return ""
	}
	f.NewRuntime = func(context.Context, state.Store, state.Settings) (reconcile.Runtime, error) { return c.rt, nil }
	f.Dial = c.rt.Dial
	st, err := NewFactory(IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}).OpenStore(context.Background(), c.store)
	require.NoError(t, err)
	require.NoError(t, st.Update(context.Background(), func(tx state.Tx) error { return tx.SetTokenHash(context.Background(), "a", hash) }))
	st.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() { done <- RunWith(ctx, f, []string{"serve", "--addr", "127.0.0.1:0", "-v"}) }()
	addr := regexp.MustCompile(`serving the mycelia API on (http://127\.0\.0\.1:\d+)`)
	var base string
	require.Eventually(t, func() bool {
		m := addr.FindStringSubmatch(errOut.String())
		if m != nil {
			base = m[1]
		}
		return m != nil
	}, 10*time.Second, 10*time.Millisecond, "serve did not start: %s", errOut.String())

	resp, err := http.Get(base + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	req, err := http.NewRequest("POST", base+"/api/mycologist/summons", strings.NewReader(`{"text": "help"}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("X-Sporectl-Spore", "a")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode, "%s", b)
	var res struct{ To, State string }
	require.NoError(t, json.Unmarshal(b, &res))
	require.Equal(t, "myco", res.To)

	// The woken mycologist is delivered to by serve itself (--follow-woken).
	require.Eventually(t, func() bool { return len(c.rt.BridgeOf("myco").Prompts()) == 1 }, 10*time.Second, 20*time.Millisecond)

	cancel()
	select {
	case code := <-done:
		require.Equal(t, 0, code, errOut.String())
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop")
	}
	logs := errOut.String()
	require.Contains(t, logs, "route=summons")
	require.NotContains(t, logs, tok)
	require.NotContains(t, logs, tok[4:])
}

// TestServeTLS: with a certificate and key, serve speaks HTTPS on any
// address and refuses plain HTTP.
func TestServeTLS(t *testing.T) {
	c := newFakeColony(t)
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "serve"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kb, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	cert, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600))

	var errOut testutil.Buffer
	f := NewFactory(IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: &errOut})
	f.Getenv = func(k string) string {
		if k == EnvStore {
			return c.store
		}
		return ""
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- RunWith(ctx, f, []string{"serve", "--addr", "127.0.0.1:0", "--tls-cert", cert, "--tls-key", keyFile})
	}()
	addr := regexp.MustCompile(`serving the mycelia API on https://(127\.0\.0\.1:\d+)`)
	var hostport string
	require.Eventually(t, func() bool {
		m := addr.FindStringSubmatch(errOut.String())
		if m != nil {
			hostport = m[1]
		}
		return m != nil
	}, 10*time.Second, 10*time.Millisecond, "serve did not start: %s", errOut.String())
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := hc.Get("https://" + hostport + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, err = http.Get("http://" + hostport + "/healthz")
	if err == nil {
		resp.Body.Close()
		require.NotEqual(t, http.StatusOK, resp.StatusCode, "plain HTTP on a TLS listener")
	}
	cancel()
	require.Equal(t, 0, <-done)

	r := c.run("", "serve", "--tls-cert", filepath.Join(dir, "none.pem"), "--tls-key", keyFile)
	require.Equal(t, ExitError, r.code)
	require.Contains(t, r.err, "load --tls-cert and --tls-key")
}

// startServe runs `serve --addr 127.0.0.1:0` over c's store until the
// test ends, and returns its base URL and its standard error.
func startServe(t *testing.T, c *fakeColony) (string, *testutil.Buffer) {
	t.Helper()
	var errOut testutil.Buffer
	f := NewFactory(IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: &errOut})
	f.Getenv = func(k string) string {
		if k == EnvStore {
			return c.store
		}
		return ""
	}
	f.NewRuntime = func(context.Context, state.Store, state.Settings) (reconcile.Runtime, error) { return c.rt, nil }
	f.Dial = c.rt.Dial
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- RunWith(ctx, f, []string{"serve", "--addr", "127.0.0.1:0"}) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("serve did not stop")
		}
	})
	api := regexp.MustCompile(`serving the mycelia API on (http://127\.0\.0\.1:\d+)`)
	var base string
	require.Eventually(t, func() bool {
		if m := api.FindStringSubmatch(errOut.String()); m != nil {
			base = m[1]
		}
		return base != ""
	}, 10*time.Second, 10*time.Millisecond, "serve did not start: %s", errOut.String())
	return base, &errOut
}

// TestServeNamesThePage: serve's first line is the page's address (and,
// while the store has no operator token, how to make one); GET / sends a
// browser there; serve --help speaks of the page.
func TestServeNamesThePage(t *testing.T) {
	c := newFakeColony(t)
	base, errOut := startServe(t, c)
	first, _, _ := strings.Cut(errOut.String(), "\n")
	require.Equal(t, "serving the page on "+base+"/ui/: "+ui.NoOperatorText, first)

	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(base + "/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode)
	require.Equal(t, "/ui/", resp.Header.Get("Location"))
	resp, err = client.Get(base + "/ui/")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, string(b), "no operator exists: run `sporectl token create --operator NAME`")

	c.ok("token", "create", "--operator", "alice")
	base, errOut = startServe(t, c)
	first, _, _ = strings.Cut(errOut.String(), "\n")
	require.Equal(t, "serving the page on "+base+"/ui/", first, "an operator exists: nothing to say")

	help := c.ok("serve", "--help")
	require.Contains(t, help, "operators' page")
	require.Contains(t, help, "http://127.0.0.1:7070/ui/")
	require.Contains(t, help, "GET / redirects")
}

// TestServePortTaken: a taken port (any listen failure) is exit 15,
// Listen, and the address is printed once.
func TestServePortTaken(t *testing.T) {
	c := newFakeColony(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	addr := ln.Addr().String()
	r := c.run("", "serve", "--addr", addr)
	require.Equal(t, ExitListen, r.code, r.err)
	require.Equal(t, 15, r.code, "documented in docs/exit-codes.md")
	require.Equal(t, 1, strings.Count(r.err, addr), "the address once: %q", r.err)
	require.Equal(t, "error: serve could not listen on "+addr+": bind: address already in use\n", r.err)
	require.Empty(t, r.out)
}
