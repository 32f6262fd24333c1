package kube

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/reconcile"
)

// Bridge says how to reach the spore's bridge:
//
//   - in the cluster (sporectl runs in a pod: serve, the reconcile
//     CronJob), straight to the pod IP on :8080, which the NetworkPolicy
//     allows from sporectl's pods only;
//   - from outside (an operator's laptop), through the API server's pod
//     proxy, authenticated as the kubeconfig's user; the returned client
//     moves the bridge's bearer token into bridge.TokenHeader, since the
//     API server takes Authorization for itself.
//
// The token is read from the spore's Secret, its only copy.
func (r *Runtime) Bridge(ctx context.Context, id string) (reconcile.BridgeEndpoint, error) {
	token, err := r.bridgeToken(ctx, id)
	if err != nil {
		return reconcile.BridgeEndpoint{}, fmt.Errorf("bridge of spore %s: %w", id, err)
	}
	port := r.opts.BridgePort
	if port == 0 {
		port = BridgePort
	}
	if r.opts.InCluster {
		ep, err := r.direct(ctx, id, port)
		if err != nil {
			return reconcile.BridgeEndpoint{}, fmt.Errorf("bridge of spore %s: %w", id, err)
		}
		ep.Token = token
		return ep, nil
	}
	ep, err := r.proxied(id, port)
	if err != nil {
		return reconcile.BridgeEndpoint{}, fmt.Errorf("bridge of spore %s through the API server: %w", id, err)
	}
	ep.Token = token
	return ep, nil
}

func (r *Runtime) bridgeToken(ctx context.Context, id string) (string, error) {
	var s *corev1.Secret
	err := retryTransient(ctx, func() (err error) {
		s, err = r.core.secrets().get(ctx, ObjectName(id))
		return err
	})
	if err != nil {
		return "", fmt.Errorf("read secret %s: %w", ObjectName(id), err)
	}
	if !Owned(s.ObjectMeta, id) {
		return "", &NotOwnedError{Kind: "Secret", Namespace: s.Namespace, Name: s.Name}
	}
	t := string(s.Data[SecretKeyBridgeToken])
	if t == "" {
		return "", fmt.Errorf("secret %s has no %s", s.Name, SecretKeyBridgeToken)
	}
	return t, nil
}

func (r *Runtime) direct(ctx context.Context, id string, port int) (reconcile.BridgeEndpoint, error) {
	var p *corev1.Pod
	err := retryTransient(ctx, func() (err error) {
		p, err = r.core.pods().get(ctx, ObjectName(id))
		return err
	})
	if err != nil {
		return reconcile.BridgeEndpoint{}, fmt.Errorf("read pod %s: %w", ObjectName(id), err)
	}
	if !Owned(p.ObjectMeta, id) {
		return reconcile.BridgeEndpoint{}, &NotOwnedError{Kind: "Pod", Namespace: p.Namespace, Name: p.Name}
	}
	if p.Status.PodIP == "" {
		return reconcile.BridgeEndpoint{}, fmt.Errorf("pod %s: %w", p.Name, ErrNoPodIP)
	}
	u := url.URL{Scheme: "http", Host: hostPort(p.Status.PodIP, port)}
	return reconcile.BridgeEndpoint{BaseURL: u.String(), Client: &http.Client{}}, nil
}

func (r *Runtime) proxied(id string, port int) (reconcile.BridgeEndpoint, error) {
	base, _, err := rest.DefaultServerUrlFor(r.config)
	if err != nil {
		return reconcile.BridgeEndpoint{}, fmt.Errorf("server URL: %w", err)
	}
	hc, err := rest.HTTPClientFor(r.config)
	if err != nil {
		return reconcile.BridgeEndpoint{}, fmt.Errorf("API client: %w", err)
	}
	hc.Transport = moveBridgeToken{next: hc.Transport}
	return reconcile.BridgeEndpoint{BaseURL: podProxyURL(base, r.opts.Namespace, ObjectName(id), port), Client: hc}, nil
}

// podProxyURL is the address of port on the pod through the API server at
// base (which may carry a path prefix).
func podProxyURL(base *url.URL, namespace, pod string, port int) string {
	u := *base
	u.Path = strings.TrimRight(u.Path, "/") + fmt.Sprintf("/api/v1/namespaces/%s/pods/%s:%d/proxy",
		url.PathEscape(namespace), pod, port)
	return u.String()
}

// moveBridgeToken lets callers set Authorization: Bearer <bridge token>
// the same way on both paths; on the proxy path it becomes
// bridge.TokenHeader and the API credentials take Authorization.
type moveBridgeToken struct{ next http.RoundTripper }

func (m moveBridgeToken) RoundTrip(req *http.Request) (*http.Response, error) {
	auth := req.Header.Get("Authorization")
	if auth == "" {
		return m.next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	req.Header.Del("Authorization")
	req.Header.Set(bridge.TokenHeader, strings.TrimSpace(strings.TrimPrefix(auth, "Bearer ")))
	return m.next.RoundTrip(req)
}

func hostPort(ip string, port int) string {
	if strings.Contains(ip, ":") {
		return "[" + ip + "]:" + strconv.Itoa(port)
	}
	return ip + ":" + strconv.Itoa(port)
}
