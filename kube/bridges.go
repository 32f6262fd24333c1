package kube

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"

	"github.com/sporectl/sporectl/reconcile"
)

// BridgeEndpoints says how to reach the bridges of ids with as few
// requests as the caller may make: one LIST of sporectl's Secrets (plus one
// of its pods in the cluster) instead of a GET per spore, and one shared
// HTTP client; for a few ids the LISTs select theirs alone (selectorFor),
// so a command about one spore does not read the fleet's Secrets.
// sporectl's own Role does not grant listing Secrets (least privilege), so
// where the LIST is forbidden it reads them one by one. An id whose bridge
// cannot be reached is missing from the map.
func (r *Runtime) BridgeEndpoints(ctx context.Context, ids []string) (map[string]reconcile.BridgeEndpoint, error) {
	out := make(map[string]reconcile.BridgeEndpoint, len(ids))
	sel, err := selectorFor(ids)
	if err != nil {
		return nil, fmt.Errorf("bridge endpoints: %w", err)
	}
	secrets, err := listWithRetry(ctx, func() (map[string]string, error) {
		l, err := r.core.secrets().list(ctx, sel)
		if err != nil {
			return nil, err
		}
		tokens := make(map[string]string, len(l.Items))
		for i := range l.Items {
			s := &l.Items[i]
			id := s.Labels[LabelSpore]
			if t := string(s.Data[SecretKeyBridgeToken]); Owned(s.ObjectMeta, id) && t != "" {
				tokens[id] = t
			}
		}
		return tokens, nil
	})
	if apierrors.IsForbidden(err) {
		for _, id := range ids {
			if ep, err := r.Bridge(ctx, id); err == nil {
				out[id] = ep
			}
		}
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list spore secrets: %w", err)
	}
	port := r.opts.BridgePort
	if port == 0 {
		port = BridgePort
	}
	if r.opts.InCluster {
		ips, err := listWithRetry(ctx, func() (map[string]string, error) {
			l, err := r.core.pods().list(ctx, sel)
			if err != nil {
				return nil, err
			}
			m := make(map[string]string, len(l.Items))
			for i := range l.Items {
				p := &l.Items[i]
				id := p.Labels[LabelSpore]
				if Owned(p.ObjectMeta, id) && p.Status.PodIP != "" {
					m[id] = p.Status.PodIP
				}
			}
			return m, nil
		})
		if err != nil {
			return nil, fmt.Errorf("list spore pods: %w", err)
		}
		hc := &http.Client{}
		for _, id := range ids {
			if tok, ip := secrets[id], ips[id]; tok != "" && ip != "" {
				u := url.URL{Scheme: "http", Host: hostPort(ip, port)}
				out[id] = reconcile.BridgeEndpoint{BaseURL: u.String(), Token: tok, Client: hc}
			}
		}
		return out, nil
	}
	base, _, err := rest.DefaultServerUrlFor(r.config)
	if err != nil {
		return nil, fmt.Errorf("server URL: %w", err)
	}
	hc, err := rest.HTTPClientFor(r.config)
	if err != nil {
		return nil, fmt.Errorf("API client: %w", err)
	}
	hc.Transport = moveBridgeToken{next: hc.Transport}
	for _, id := range ids {
		tok := secrets[id]
		if tok == "" {
			continue
		}
		out[id] = reconcile.BridgeEndpoint{BaseURL: podProxyURL(base, r.opts.Namespace, ObjectName(id), port), Token: tok, Client: hc}
	}
	return out, nil
}

func listWithRetry(ctx context.Context, fn func() (map[string]string, error)) (map[string]string, error) {
	var m map[string]string
	err := retryTransient(ctx, func() (err error) {
		m, err = fn()
		return err
	})
	return m, err
}
