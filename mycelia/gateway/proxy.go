package gateway

import (
	"context"
	"errors"
	"io"
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
	// A body bounded as it is read: one without a length is cut at the
	// bound (and the call answered 413); one with a length past it never
	// gets here (admit).
	if b := pr.In.Body; b != nil && b != http.NoBody {
		out.Body = &boundedBody{ReadCloser: b, left: MaxRequestBody, call: callOf(pr.In.Context())}
	}
}

// boundedBody is a call's body cut after MaxRequestBody bytes, the call
// marked too large (the transport's error then does not say why).
type boundedBody struct {
	io.ReadCloser
	left int64
	call *call
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		b.call.tooLarge.Store(true)
		return 0, errTooLargeBody
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	if b.left <= 0 && err == nil {
		// Exactly the bound read: only more than that is too much.
		var one [1]byte
		if m, _ := b.ReadCloser.Read(one[:]); m > 0 {
			b.call.tooLarge.Store(true)
			return n, errTooLargeBody
		}
		return n, io.EOF
	}
	return n, err
}

var errTooLargeBody = errors.New("a model call's body is over 32 MiB")

// upstreamFailed answers a call the upstream did not answer: its body
// too large, the upstream unreachable or too slow; a client that left
// is answered nothing.
func (g *Gateway) upstreamFailed(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(r.Context().Err(), context.Canceled) {
		return
	}
	if callOf(r.Context()).tooLarge.Load() {
		tooLarge().write(w)
		return
	}
	// The error names the upstream's address, never a header: the key
	// is in none of it.
	g.cfg.Logger.Warn("model gateway: the upstream did not answer", "spore", callOf(r.Context()).spore, "err", err)
	status, msg := http.StatusBadGateway, "the model gateway could not reach the model's API"
	if errors.Is(err, context.DeadlineExceeded) {
		status, msg = http.StatusGatewayTimeout, "the model's API did not answer in time"
	}
	refusal{status, errAPI, msg, 0}.write(w)
}

func tooLarge() refusal {
	return refusal{http.StatusRequestEntityTooLarge, errTooLarge, "a model call's body may be at most 32 MiB", 0}
}
