package kube_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/reconcile"
)

// faulty sits between the runtime and the real API server and breaks the
// first n requests matching method and path suffix in one way.
type faulty struct {
	mu     sync.Mutex
	method string
	suffix string
	left   int
	hits   int
	mode   string // "status:CODE:REASON" answers instead of the server; "lost" forwards, then loses the answer
	next   http.RoundTripper
}

func (f *faulty) RoundTrip(req *http.Request) (*http.Response, error) {
	f.mu.Lock()
	match := req.Method == f.method && strings.HasSuffix(req.URL.Path, f.suffix)
	if match {
		f.hits++
	}
	inject := match && f.left != 0
	if inject && f.left > 0 {
		f.left--
	}
	f.mu.Unlock()
	if !inject {
		return f.next.RoundTrip(req)
	}
	if f.mode == "lost" {
		resp, err := f.next.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		return nil, fmt.Errorf("injected: %w", syscall.ECONNRESET)
	}
	var code int
	var reason string
	_, _ = fmt.Sscanf(strings.ReplaceAll(f.mode, ":", " "), "status %d %s", &code, &reason)
	body := fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected","reason":%q,"code":%d}`, reason, code)
	return &http.Response{
		StatusCode: code, Status: fmt.Sprintf("%d %s", code, reason),
		Header:  http.Header{"Content-Type": []string{"application/json"}},
		Body:    io.NopCloser(strings.NewReader(body)),
		Request: req, ProtoMajor: 1, ProtoMinor: 1,
	}, nil
}

func (e *env) faultyRuntime(t *testing.T, f *faulty) *kube.Runtime {
	cfg := rest.CopyConfig(e.saCfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { f.next = rt; return f })
	rt, err := kube.New(cfg, kube.Options{Namespace: e.ns})
	require.NoError(t, err)
	return rt
}

func TestStartRetriesWhatIsSafeToRetry(t *testing.T) {
	cases := []struct {
		name     string
		f        *faulty
		wantErr  string // empty: Start succeeds
		wantHits int
	}{
		{"503 twice on pod create", &faulty{method: "POST", suffix: "/pods", left: 2, mode: "status:503:ServiceUnavailable"}, "", 3},
		{"504 on claim create", &faulty{method: "POST", suffix: "/persistentvolumeclaims", left: 1, mode: "status:504:Timeout"}, "", 2},
		{"429 on secret create", &faulty{method: "POST", suffix: "/secrets", left: 1, mode: "status:429:TooManyRequests"}, "", 2},
		// The server created the pod but the answer was lost: the retry
		// meets AlreadyExists, reads the pod, finds it ours: success.
		{"answer lost after pod create", &faulty{method: "POST", suffix: "/pods", left: 1, mode: "lost"}, "", 2},
		{"500 that never ends", &faulty{method: "POST", suffix: "/pods", left: -1, mode: "status:500:InternalError"}, "create pod spore-", 5},
		{"403 is not retried", &faulty{method: "POST", suffix: "/pods", left: -1, mode: "status:403:Forbidden"}, "create pod spore-", 1},
	}
	e := newEnv(t)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := fmt.Sprintf("retry-%d", i)
			f := c.f
			rt := e.faultyRuntime(t, f)
			err := rt.Start(t.Context(), spore(id), reconcile.Launch{Creds: creds(id)})
			if c.wantErr == "" {
				require.NoError(t, err)
				_, err := e.admin.CoreV1().Pods(e.ns).Get(t.Context(), kube.ObjectName(id), metav1.GetOptions{})
				require.NoError(t, err)
			} else {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.wantErr)
				assert.Contains(t, err.Error(), id)
			}
			assert.Equal(t, c.wantHits, f.hits, "requests that reached the fault")
		})
	}
}

// A conflict on the secret update (someone wrote between our read and our
// write) is resolved by reading again.
func TestSecretUpdateRetriesOnConflict(t *testing.T) {
	e := newEnv(t)
	e.start(t, "conflict")
	// Tokens rotate only with a new pod: let the old one go first.
	require.NoError(t, e.rt.Stop(t.Context(), "conflict"))
	f := &faulty{method: "PUT", suffix: "/secrets/spore-conflict", left: 1, mode: "status:409:Conflict"}
	rt := e.faultyRuntime(t, f)
	rotated := reconcile.Credentials{APIToken: "spt_new", BridgeToken: "brt_new"}
	require.NoError(t, rt.Start(t.Context(), spore("conflict"), reconcile.Launch{Creds: rotated}))
	assert.Equal(t, 2, f.hits)
	s, err := e.admin.CoreV1().Secrets(e.ns).Get(t.Context(), "spore-conflict", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, string(s.Data["bridge-token"]) == rotated.BridgeToken, "rotated after the conflict")
}

// Observe surfaces a failure clearly, naming what it was doing.
func TestObserveSurfacesServerErrors(t *testing.T) {
	e := newEnv(t)
	f := &faulty{method: "GET", suffix: "/pods", left: -1, mode: "status:503:ServiceUnavailable"}
	rt := e.faultyRuntime(t, f)
	_, err := rt.Observe(t.Context(), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "list pods in "+e.ns)
	var status apierrors.APIStatus
	require.True(t, errors.As(err, &status), "the API status stays inspectable: %v", err)
	assert.EqualValues(t, http.StatusServiceUnavailable, status.Status().Code)
}

// hook runs fn once, just before the first request matching method and
// path suffix reaches the server.
type hook struct {
	once   sync.Once
	method string
	suffix string
	fn     func()
	next   http.RoundTripper
}

func (h *hook) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == h.method && strings.HasSuffix(req.URL.Path, h.suffix) {
		h.once.Do(h.fn)
	}
	return h.next.RoundTrip(req)
}

// Someone replaces the pod between the runtime's ownership check and its
// delete: the UID precondition makes the server refuse the delete, the
// runtime reads again, finds a pod that is not ours, and leaves it.
func TestStopNeverDeletesAPodReplacedAfterTheCheck(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.start(t, "swap")
	pods := e.admin.CoreV1().Pods(e.ns)
	var replacement *corev1.Pod
	h := &hook{method: "DELETE", suffix: "/pods/spore-swap", fn: func() {
		zero := int64(0)
		require.NoError(t, pods.Delete(ctx, "spore-swap", metav1.DeleteOptions{GracePeriodSeconds: &zero}))
		p, err := e.rt.PodSpecForTest(spore("swap"))
		require.NoError(t, err)
		p.Labels, p.Annotations = map[string]string{"app": "someone-else"}, nil
		replacement, err = pods.Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
	}}
	cfg := rest.CopyConfig(e.saCfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { h.next = rt; return h })
	rt, err := kube.New(cfg, kube.Options{Namespace: e.ns})
	require.NoError(t, err)

	var notOwned *kube.NotOwnedError
	require.ErrorAs(t, rt.Stop(ctx, "swap"), &notOwned)
	got, err := pods.Get(ctx, "spore-swap", metav1.GetOptions{})
	require.NoError(t, err, "the replacement survives")
	assert.Equal(t, replacement.UID, got.UID)
	assert.Nil(t, got.DeletionTimestamp)
}
