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

// The pass asks a runtime for its bridges' endpoints only if it is one.
var _ reconcile.BridgeLister = (*Runtime)(nil)

// BridgeEndpoints says how to reach the bridges of ids with as few
// requests as the caller may make: one LIST of sporectl's Secrets instead
// of a GET per spore, and one shared HTTP client; for a few ids the LIST
// selects theirs alone (selectorFor), so a command about one spore does
// not read the fleet's Secrets. sporectl's own Role does not grant
// listing Secrets (least privilege), so where the LIST is forbidden it
// reads them one by one. In the cluster a bridge is dialled at its pod's
// IP as fleet (Observe's answer in the same pass) saw it: the pods are
// not read again. An id whose bridge cannot be reached is missing from
// the map.
func (r *Runtime) BridgeEndpoints(ctx context.Context, fleet reconcile.FleetObservation, ids []string) (map[string]reconcile.BridgeEndpoint, error) {
	sel, err := selectorFor(ids)
	if err != nil {
		return nil, fmt.Errorf("bridge endpoints: %w", err)
	}
	listed, err := r.bridgeTokens(ctx, sel)
	forbidden := apierrors.IsForbidden(err)
	if err != nil && !forbidden {
		return nil, fmt.Errorf("list spore secrets: %w", err)
	}
	// token is id's bridge token, "" when it has none to be reached with.
	token := func(id string) string {
		if !forbidden {
			return listed[id]
		}
		t, err := r.bridgeToken(ctx, id)
		if err != nil {
			return ""
		}
		return t
	}
	port := r.opts.BridgePort
	if port == 0 {
		port = BridgePort
	}
	out := make(map[string]reconcile.BridgeEndpoint, len(ids))
	if r.opts.InCluster {
		hc := &http.Client{}
		for _, id := range ids {
			po := fleet.Spores[id]
			if !po.Owned || po.IP == "" {
				continue // nothing to dial: its token is not read
			}
			if tok := token(id); tok != "" {
				u := url.URL{Scheme: "http", Host: hostPort(po.IP, port)}
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
		if tok := token(id); tok != "" {
			out[id] = reconcile.BridgeEndpoint{BaseURL: podProxyURL(base, r.opts.Namespace, ObjectName(id), port), Token: tok, Client: hc}
		}
	}
	return out, nil
}

// bridgeTokens lists the bridge tokens of the spores sel selects, by id,
// in one LIST of their Secrets (each one sporectl's own).
func (r *Runtime) bridgeTokens(ctx context.Context, sel string) (map[string]string, error) {
	var tokens map[string]string
	err := retryTransient(ctx, func() error {
		l, err := r.core.secrets().list(ctx, sel)
		if err != nil {
			return err
		}
		tokens = make(map[string]string, len(l.Items))
		for i := range l.Items {
			s := &l.Items[i]
			id := s.Labels[LabelSpore]
			if t := string(s.Data[SecretKeyBridgeToken]); Owned(s.ObjectMeta, id) && t != "" {
				tokens[id] = t
			}
		}
		return nil
	})
	return tokens, err
}
