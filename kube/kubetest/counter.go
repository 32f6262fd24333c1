package kubetest

import (
	"io"
	"net/http"
	"sync/atomic"

	"k8s.io/client-go/rest"
)

// Counter counts the HTTP requests a rest.Config's clients send, and the
// bytes of the bodies they read back.
type Counter struct{ n, bytes atomic.Int64 }

// Requests is the number sent so far.
func (c *Counter) Requests() int64 { return c.n.Load() }

// ResponseBytes is how many bytes of response bodies were read so far:
// what the API server sent.
func (c *Counter) ResponseBytes() int64 { return c.bytes.Load() }

// Reset starts counting from zero.
func (c *Counter) Reset() { c.n.Store(0); c.bytes.Store(0) }

type countingTransport struct {
	c    *Counter
	next http.RoundTripper
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.c.n.Add(1)
	resp, err := t.next.RoundTrip(r)
	if resp != nil && resp.Body != nil {
		resp.Body = countingBody{ReadCloser: resp.Body, c: t.c}
	}
	return resp, err
}

type countingBody struct {
	io.ReadCloser
	c *Counter
}

func (b countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.c.bytes.Add(int64(n))
	return n, err
}

// Counting returns a copy of cfg whose every request is counted.
func Counting(cfg *rest.Config) (*rest.Config, *Counter) {
	c := &Counter{}
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{c: c, next: rt} })
	return out, c
}
