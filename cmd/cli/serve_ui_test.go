package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
)

// TestServeMountsUI: /ui/ goes to the page, everything else to the API.
func TestServeMountsUI(t *testing.T) {
	ctx := context.Background()
	st, _, err := dirstore.Init(ctx, filepath.Join(t.TempDir(), "store"), state.Settings{Runtime: "local", DefaultSpec: state.DefaultSpec()}, dirstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	f := NewFactory(IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
	o := &serveOptions{f: f}
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "api "+r.URL.Path) })
	ts := httptest.NewServer(o.withUI(ctx, api, st))
	t.Cleanup(ts.Close)
	get := func(p string) (int, http.Header, string) {
		resp, err := ts.Client().Get(ts.URL + p)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, resp.Header, string(b)
	}
	code, hdr, body := get("/ui/static/ui.css")
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, hdr.Get("Content-Security-Policy"), "default-src 'none'")
	code, _, body = get("/ui/spores/nobody")
	require.Equal(t, http.StatusNotFound, code)
	require.Contains(t, body, "no such spore")
	code, _, body = get("/ui")
	require.Equal(t, http.StatusOK, code, "redirected to /ui/")
	require.Contains(t, body, "No spores.")
	for _, p := range []string{"/healthz", "/api/spores", "/uix", "/"} {
		_, hdr, body := get(p)
		require.Equal(t, "api "+p, body)
		require.Empty(t, hdr.Get("Content-Security-Policy"))
	}
}
