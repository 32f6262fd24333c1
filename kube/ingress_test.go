package kube_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sporectl/sporectl/kube/kubetest"
)

// ingressPrefixMatches is pathType Prefix: the request path's elements
// begin with the rule path's (so /ui matches /ui/spores/x, not /uix).
func ingressPrefixMatches(rule, req string) bool {
	if rule == "/" {
		return true
	}
	r := strings.Split(strings.Trim(rule, "/"), "/")
	q := strings.Split(strings.Trim(req, "/"), "/")
	if len(q) < len(r) {
		return false
	}
	for i := range r {
		if r[i] != q[i] {
			return false
		}
	}
	return true
}

// The Ingress example is accepted by the API server (server-side dry run),
// is TLS on its one host, sends the page to serve's Service port and
// nothing of the spores' API, and is not applied by the kustomization.
func TestIngressExamplePassesServerSideDryRun(t *testing.T) {
	srv := kubetest.Shared(t)
	ctx := t.Context()
	var ing *networkingv1.Ingress
	for _, obj := range manifestObjects(t, "examples/ingress.yaml") {
		o, ok := obj.(*networkingv1.Ingress)
		require.True(t, ok, "examples/ingress.yaml holds an Ingress, not %T", obj)
		require.Nil(t, ing, "examples/ingress.yaml holds one Ingress")
		ing = o
	}
	require.NotNil(t, ing)
	for _, o := range renderDeploy(t) {
		assert.NotEqual(t, "Ingress", o.GetKind(), "the kustomization must not apply the example")
	}

	w := &warnings{}
	cfg := rest.CopyConfig(srv.Config)
	cfg.WarningHandler = w
	admin, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	ns := kubetest.Namespace(t, srv.Config)
	stored, err := admin.NetworkingV1().Ingresses(ns).Create(ctx, ing, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	require.NoError(t, err, "dry-run create the example Ingress")
	assert.Empty(t, w.all, "the API server warned about the example")

	require.Len(t, stored.Spec.Rules, 1, "one host")
	host := stored.Spec.Rules[0].Host
	require.NotEmpty(t, host)
	require.Len(t, stored.Spec.TLS, 1)
	assert.Equal(t, []string{host}, stored.Spec.TLS[0].Hosts, "TLS covers the host")
	assert.NotEmpty(t, stored.Spec.TLS[0].SecretName)

	// The backend is serve's Service, on a port it has.
	var svc *corev1.Service
	for _, o := range renderDeploy(t) {
		if o.GetKind() == "Service" {
			svc = &corev1.Service{}
			require.NoError(t, runtimeFromUnstructured(o, svc))
		}
	}
	require.NotNil(t, svc, "serve.yaml has a Service")
	paths := stored.Spec.Rules[0].HTTP.Paths
	require.NotEmpty(t, paths)
	for _, p := range paths {
		require.NotNil(t, p.Backend.Service)
		assert.Equal(t, svc.Name, p.Backend.Service.Name)
		found := false
		for _, sp := range svc.Spec.Ports {
			found = found || (p.Backend.Service.Port.Name != "" && sp.Name == p.Backend.Service.Port.Name) || sp.Port == p.Backend.Service.Port.Number
		}
		assert.True(t, found, "Service %s has the port %+v the Ingress names", svc.Name, p.Backend.Service.Port)
		require.NotNil(t, p.PathType)
		assert.Equal(t, networkingv1.PathTypePrefix, *p.PathType)
	}
	routed := func(req string) bool {
		for _, p := range paths {
			if ingressPrefixMatches(p.Path, req) {
				return true
			}
		}
		return false
	}
	for _, req := range []string{"/ui", "/ui/", "/ui/spores/alpha", "/ui/static/page.css", "/ui/login"} {
		assert.True(t, routed(req), "the page's %s goes through", req)
	}
	for _, req := range []string{"/api/mycologist/summons", "/spores/alpha/prompt", "/healthz", "/uix"} {
		assert.False(t, routed(req), "%s stays inside the cluster", req)
	}
}
