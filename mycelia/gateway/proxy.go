package gateway

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"strings"
	"time"
)

// newProxy is the forwarding half: the call's path under the upstream's,
// the spore's credentials out and the key in, the answer's usage counted
// as it passes (count.go), streams flushed event by event.
func (g *Gateway) newProxy() *httputil.ReverseProxy {
	return &httputil.ReverseProxy{
		Rewrite:        g.rewrite,
		Transport:      g.cfg.Transport,
		FlushInterval:  -1,
		ModifyResponse: g.countAnswer,
		ErrorHandler:   g.upstreamFailed,
		ErrorLog:       slog.NewLogLogger(g.cfg.Logger.Handler(), slog.LevelWarn),
	}
}

// rewrite makes the upstream's request of the spore's: Rewrite has
// already dropped the hop-by-hop and forwarding headers.
func (g *Gateway) rewrite(pr *httputil.ProxyRequest) {
	out := pr.Out
	callOf(pr.In.Context()).sent = time.Now()
	out.URL.Path = strings.TrimPrefix(pr.In.URL.Path, Prefix)
	out.URL.RawPath = ""
	pr.SetURL(g.cfg.Upstream)
	h := out.Header
	for name := range h {
		if strings.HasPrefix(http.CanonicalHeaderKey(name), "X-Sporectl-") {
			h.Del(name)
		}
	}
	for _, name := range []string{"Authorization", "X-Api-Key", "Cookie", "Proxy-Authorization"} {
		h.Del(name)
	}
	h.Set("X-Api-Key", g.cfg.Key)
	// The answer's events are read as they pass: they must come as
	// written, not compressed.
	h.Set("Accept-Encoding", "identity")
}

// upstreamFailed answers a call the upstream did not answer: the
// upstream unreachable or too slow, or its answer not counted; a client
// that left is answered nothing.
func (g *Gateway) upstreamFailed(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(r.Context().Err(), context.Canceled) {
		return
	}
	// The error names the upstream's address, never a header: the key
	// is in none of it.
	g.cfg.Logger.Warn("model gateway: the upstream did not answer", "spore", callOf(r.Context()).spore, "err", err)
	status, msg := http.StatusBadGateway, "the model gateway could not reach the model's API"
	switch {
	case errors.Is(err, errNotCounted):
		msg = "the model gateway could not count the model's answer, so it does not pass it on"
	case errors.Is(err, context.DeadlineExceeded):
		status, msg = http.StatusGatewayTimeout, "the model's API did not answer in time"
	}
	refusal{status, errAPI, msg, 0}.write(w)
}

func tooLarge() refusal {
	return refusal{http.StatusRequestEntityTooLarge, errTooLarge, "a model call's body may be at most 32 MiB", 0}
}
