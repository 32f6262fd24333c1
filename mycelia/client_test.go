package mycelia

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge/sporeenv"
)

func TestConfigFromEnv(t *testing.T) {
	home := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".sporectl-bridge"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, TokenFile), []byte("spt_fromfile\n"), 0o600))
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	full := map[string]string{sporeenv.APIURL: "http://127.0.0.1:7070", sporeenv.SporeID: "a", sporeenv.APIToken: "spt_fromenv", "HOME": home}

	cfg, err := ConfigFromEnv(env(full))
	require.NoError(t, err)
	require.Equal(t, "spt_fromenv", cfg.Token, "the environment's token first")

	delete(full, sporeenv.APIToken)
	cfg, err = ConfigFromEnv(env(full))
	require.NoError(t, err)
	require.Equal(t, "spt_fromfile", cfg.Token, "then $HOME/.sporectl-bridge/api-token")

	for name, c := range map[string]struct {
		kv  map[string]string
		msg string
	}{
		"no url":     {map[string]string{sporeenv.SporeID: "a", sporeenv.APIToken: "t"}, sporeenv.APIURL + " is not set"},
		"no id":      {map[string]string{sporeenv.APIURL: "http://x", sporeenv.APIToken: "t"}, sporeenv.SporeID + " is not set"},
		"bad id":     {map[string]string{sporeenv.APIURL: "http://x", sporeenv.SporeID: "A!", sporeenv.APIToken: "t"}, "invalid spore id"},
		"no token":   {map[string]string{sporeenv.APIURL: "http://x", sporeenv.SporeID: "a", "HOME": t.TempDir()}, "cannot be read"},
		"no home":    {map[string]string{sporeenv.APIURL: "http://x", sporeenv.SporeID: "a"}, "neither is $HOME"},
		"empty file": {map[string]string{sporeenv.APIURL: "http://x", sporeenv.SporeID: "a", "HOME": emptyTokenHome(t)}, "is empty"},
	} {
		_, err := ConfigFromEnv(env(c.kv))
		var ce *ConfigError
		require.ErrorAs(t, err, &ce, name)
		require.ErrorContains(t, err, c.msg, name)
	}
	_, err = NewClient(Config{URL: "ftp://x", Spore: "a", Token: "t"})
	require.ErrorContains(t, err, "want http(s)://host:port")
	_, err = NewClient(Config{URL: "http://user:secret@x", Spore: "a", Token: "t"})
	require.Error(t, err)
	require.NotContains(t, err.Error(), "secret")
}

func emptyTokenHome(t *testing.T) string {
	home := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".sporectl-bridge"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, TokenFile), []byte("\n"), 0o600))
	return home
}

// TestClientRetriesWithOneRequestID: a lost connection and 503s are
// retried with the same request id; a 4xx is not.
func TestClientRetriesWithOneRequestID(t *testing.T) {
	var mu sync.Mutex
	var ids []string
	n := 0
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		i := n
		ids = append(ids, r.Header.Get(HeaderRequestID))
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer spt_secret" || r.Header.Get(HeaderSpore) != "a" {
			t.Errorf("credentials not sent: %v", r.Header)
		}
		switch i {
		case 1: // serve died before answering
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			conn.Close()
		case 2:
			writeError(w, errorf(http.StatusServiceUnavailable, CodeUnavailable, "the store is not available; try again"))
		default:
			writeJSON(w, http.StatusAccepted, SendResponse{ID: "m-1", To: "myco", State: Delivered})
		}
	}))
	defer ts.Close()
	c, err := NewClient(Config{URL: ts.URL, Spore: "a", Token: "spt_secret", RetryFor: 10 * time.Second})
	require.NoError(t, err)
	c.sleep = func(context.Context, time.Duration) error { return nil }
	res, err := c.Ask(context.Background(), "help")
	require.NoError(t, err)
	require.Equal(t, "m-1", res.ID)
	require.Len(t, ids, 3)
	require.Equal(t, ids[0], ids[1])
	require.Equal(t, ids[0], ids[2])

	// A refusal is final.
	ts2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, errorf(http.StatusForbidden, CodeForbidden, "spore x is not in your reach"))
	}))
	defer ts2.Close()
	c2, err := NewClient(Config{URL: ts2.URL, Spore: "a", Token: "spt_secret"})
	require.NoError(t, err)
	_, err = c2.Tell(context.Background(), "x", "hi", false, false)
	var ae *Error
	require.ErrorAs(t, err, &ae)
	require.Equal(t, http.StatusForbidden, ae.Status)
	require.Equal(t, "403 Forbidden: spore x is not in your reach", err.Error())
}

func TestClientUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	c, err := NewClient(Config{URL: "http://" + addr, Spore: "a", Token: "spt_secret", RetryFor: 300 * time.Millisecond})
	require.NoError(t, err)
	start := time.Now()
	_, err = c.Spores(context.Background())
	var ue *UnreachableError
	require.True(t, errors.As(err, &ue), "%v", err)
	require.Less(t, time.Since(start), 5*time.Second)
	require.NotContains(t, err.Error(), "spt_secret")
}
