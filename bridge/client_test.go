package bridge

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestNewClientRejectsBadAddresses(t *testing.T) {
	for _, addr := range []string{"", "localhost:8080", "ftp://h:1", "http://"} {
		_, err := NewClient(addr, "t", nil)
		require.Error(t, err, addr)
	}
	_, err := NewClient("http://127.0.0.1:8080/", "t", nil)
	require.NoError(t, err)
}

func TestClientSendsTokenAndDecodesErrors(t *testing.T) {
	var gotAuth, gotQuery string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotQuery = r.Header.Get("Authorization"), r.URL.RawQuery
		switch r.URL.Path {
		case "/v1/events":
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"error":"after 9 is beyond the last line 3"}`))
		default:
			w.WriteHeader(http.StatusBadGateway)
			_, _ = w.Write([]byte("plain text failure"))
		}
	}))
	defer ts.Close()
	c, err := NewClient(ts.URL, "secret-token-value", ts.Client())
	require.NoError(t, err)

	_, err = c.Events(context.Background(), 9, 20, 1500*time.Millisecond)
	require.ErrorIs(t, err, ErrAhead)
	require.NotErrorIs(t, err, ErrNotFound)
	var apiErr *APIError
	require.True(t, errors.As(err, &apiErr))
	require.Equal(t, "after 9 is beyond the last line 3", apiErr.Message)
	require.Equal(t, "Bearer secret-token-value", gotAuth)
	require.Equal(t, "after=9&limit=20&wait=1.5s", gotQuery)
	require.NotContains(t, err.Error(), "secret-token-value")

	_, err = c.Status(context.Background())
	require.ErrorContains(t, err, "plain text failure")
	require.True(t, errors.As(err, &apiErr))
	require.Equal(t, http.StatusBadGateway, apiErr.Status)
}

func TestScrubKeepsTokenOut(t *testing.T) {
	err := scrub(errors.New(`Get "http://x": header Bearer abc123 rejected`), "abc123")
	require.NotContains(t, err.Error(), "abc123")
	require.Contains(t, err.Error(), "[token]")
}
