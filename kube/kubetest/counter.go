package kubetest

import (
	"net/http"
	"sync/atomic"

	"k8s.io/client-go/rest"
)

// Counter counts the HTTP requests a rest.Config's clients send.
type Counter struct{ n atomic.Int64 }

// Requests is the number sent so far.
func (c *Counter) Requests() int64 { return c.n.Load() }

// Reset starts counting from zero.
func (c *Counter) Reset() { c.n.Store(0) }

type countingTransport struct {
	c    *Counter
	next http.RoundTripper
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.c.n.Add(1)
	return t.next.RoundTrip(r)
}

// Counting returns a copy of cfg whose every request is counted.
func Counting(cfg *rest.Config) (*rest.Config, *Counter) {
	c := &Counter{}
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{c: c, next: rt} })
	return out, c
}
