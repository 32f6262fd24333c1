package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge/fakeapi"
	"github.com/sporectl/sporectl/internal/testutil"
	"github.com/sporectl/sporectl/state"
)

func emptyFile(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "empty")
	require.NoError(t, os.WriteFile(p, []byte(" \n"), 0o600))
	return p
}

// TestServeModelGateway: serve answers a spore's model call under
// /model/ with the key of --model-key-file, forwarded to --model-upstream
// and counted in the store; its first lines say it holds a key, and
// nothing it prints holds the key or the spore's token.
func TestServeModelGateway(t *testing.T) {
	const key = "sk-ant-serve-only-SECRET"
	c := newFakeColony(t)
	c.ok("create", "a", "--colony", "lab", "--wake")
	tok, hash, err := state.NewToken()
	require.NoError(t, err)
	st, err := NewFactory(IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}).OpenStore(context.Background(), c.store)
	require.NoError(t, err)
	require.NoError(t, st.Update(context.Background(), func(tx state.Tx) error { return tx.SetTokenHash(context.Background(), "a", hash) }))
	defer st.Close()

	var gotKey string
	fake := fakeapi.New()
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotKey = r.Header.Get("X-Api-Key")
		fake.ServeHTTP(w, r)
	})
	ts := httptest.NewServer(up)
	defer ts.Close()
	upSrv := ts.URL
	keyFile := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(keyFile, []byte(key+"\n"), 0o600))

	var errOut testutil.Buffer
	f := NewFactory(IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: &errOut})
	f.Getenv = func(k string) string {
		switch k {
		case EnvStore:
			return c.store
		case "ANTHROPIC_API_KEY":
			return "sk-ant-the-environment-s-not-used"
		}
		return ""
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- RunWith(ctx, f, []string{"serve", "--addr", "127.0.0.1:0", "-v", "--model-upstream", upSrv, "--model-key-file", keyFile})
	}()
	line := regexp.MustCompile(`serving the model gateway on (http://127\.0\.0\.1:\d+)/model/ to ([^\s,]+), its key from --model-key-file`)
	var base string
	require.Eventually(t, func() bool {
		m := line.FindStringSubmatch(errOut.String())
		if m != nil {
			base = m[1]
			require.Equal(t, upSrv, m[2])
		}
		return m != nil
	}, 10*time.Second, 10*time.Millisecond, "serve did not start: %s", errOut.String())
	require.Contains(t, errOut.String(), "address check: model", "the address check has the key too")

	req, err := http.NewRequest(http.MethodPost, base+"/model/v1/messages", strings.NewReader(`{"model":"claude-haiku-4-5","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`))
	require.NoError(t, err)
	req.Header.Set("x-api-key", "a:"+tok)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", b)
	require.Equal(t, key, gotKey, "the upstream got the key of --model-key-file")
	require.NotContains(t, string(b), key)

	cancel()
	select {
	case code := <-done:
		require.Equal(t, 0, code, errOut.String())
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop")
	}
	sp, err := NewFactory(IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}).OpenStore(context.Background(), c.store)
	require.NoError(t, err)
	defer sp.Close()
	rec, err := state.ViewValue(context.Background(), sp, func(tx state.Tx) (state.Spore, error) { return tx.Spore(context.Background(), "a") })
	require.NoError(t, err)
	require.Equal(t, int64(100), rec.GatewayRecord.CountedOn(time.Now()).InputTokens, "the call was counted in the store")
	logs := errOut.String()
	for _, secret := range []string{key, tok, tok[4:]} {
		require.NotContains(t, logs, secret)
	}
}

// TestServeNoModelKey: without a key file or $ANTHROPIC_API_KEY serve
// still serves, and says the gateway refuses every call.
func TestServeNoModelKey(t *testing.T) {
	o := &serveOptions{}
	require.NoError(t, o.Model.validate(func(string) string { return "" }))
	require.Equal(t, "serving the model gateway on http://h/model/ to https://api.anthropic.com, no key (--model-key-file or $ANTHROPIC_API_KEY): every model call is refused", o.Model.line("http://h"))
	require.NoError(t, o.Model.validate(func(k string) string {
		return map[string]string{"ANTHROPIC_API_KEY": "sk-x", "ANTHROPIC_BASE_URL": "http://u:pw@up:1/v"}[k]
	}))
	require.Equal(t, "serving the model gateway on http://h/model/ to http://u:xxxxx@up:1/v, its key from $ANTHROPIC_API_KEY", o.Model.line("http://h"))
}
