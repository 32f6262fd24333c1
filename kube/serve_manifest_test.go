package kube_test

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sporectl/sporectl/kube"
)

// serve.yaml exposes the API and the page on one Service port: serve
// listens on every interface of its pod (the Service's traffic, and
// kubectl port-forward's, which arrives on the pod's loopback and so gets
// the page without a login) on the container port the Service targets,
// and is ready when /healthz answers there.
func TestServeManifestExposesTheAPIAndThePage(t *testing.T) {
	var dep *appsv1.Deployment
	var svc *corev1.Service
	for _, o := range renderDeploy(t) {
		switch o.GetKind() {
		case "Deployment":
			dep = &appsv1.Deployment{}
			require.NoError(t, runtimeFromUnstructured(o, dep))
		case "Service":
			svc = &corev1.Service{}
			require.NoError(t, runtimeFromUnstructured(o, svc))
		}
	}
	require.NotNil(t, dep)
	require.NotNil(t, svc)
	require.Len(t, dep.Spec.Template.Spec.Containers, 1)
	c := dep.Spec.Template.Spec.Containers[0]
	require.NotEmpty(t, c.Args)
	assert.Equal(t, "serve", c.Args[0])

	var addr string
	for i, a := range c.Args {
		if a == "--addr" && i+1 < len(c.Args) {
			addr = c.Args[i+1]
		}
	}
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err, "serve's --addr %q", addr)
	assert.Contains(t, []string{"", "0.0.0.0", "::"}, host, "serve listens on every interface, loopback included")
	assert.Contains(t, c.Args, "--insecure-listen", "plain HTTP off loopback needs the flag (or --tls-cert/--tls-key)")

	require.Len(t, svc.Spec.Ports, 1)
	target := svc.Spec.Ports[0].TargetPort
	require.Equal(t, intstr.String, target.Type, "the Service targets a named port")
	var cport int32
	for _, p := range c.Ports {
		if p.Name == target.StrVal {
			cport = p.ContainerPort
		}
	}
	require.NotZero(t, cport, "serve's container has the port %q", target.StrVal)
	assert.Equal(t, port, strconv.Itoa(int(cport)), "serve listens on the port its Service targets")
	for k, v := range svc.Spec.Selector {
		assert.Equal(t, v, dep.Spec.Template.Labels[k], "the Service selects serve's pods (%s)", k)
	}

	require.NotNil(t, c.ReadinessProbe)
	require.NotNil(t, c.ReadinessProbe.HTTPGet)
	assert.Equal(t, "/healthz", c.ReadinessProbe.HTTPGet.Path)
	assert.Equal(t, target, c.ReadinessProbe.HTTPGet.Port)
	assert.Nil(t, c.LivenessProbe, "a store outage must not restart serve")
}

// TestServeManifestHoldsTheModelKey: serve's container gets the model's
// Secret, optional (serve runs without it, as spores do in direct mode),
// as environment (ANTHROPIC_API_KEY, what serve reads); the store's URL
// stays its own explicit variable, which wins over a key of that name. No
// other object of the manifests names that Secret.
func TestServeManifestHoldsTheModelKey(t *testing.T) {
	var dep *appsv1.Deployment
	for _, o := range renderDeploy(t) {
		if o.GetKind() == "Deployment" && o.GetName() == "sporectl-serve" {
			dep = &appsv1.Deployment{}
			require.NoError(t, runtimeFromUnstructured(o, dep))
			continue
		}
		b, err := o.MarshalJSON()
		require.NoError(t, err)
		assert.NotContains(t, string(b), kube.ModelSecret, "%s %s: only serve holds the model's key", o.GetKind(), o.GetName())
	}
	require.NotNil(t, dep)
	c := dep.Spec.Template.Spec.Containers[0]
	var found bool
	for _, ef := range c.EnvFrom {
		if ef.SecretRef != nil && ef.SecretRef.Name == kube.ModelSecret {
			found = true
			require.NotNil(t, ef.SecretRef.Optional)
			assert.True(t, *ef.SecretRef.Optional, "serve starts without the model's Secret")
		}
	}
	assert.True(t, found, "serve's Deployment gets the %s Secret", kube.ModelSecret)
	var store bool
	for _, e := range c.Env {
		store = store || (e.Name == "SPORECTL_STORE" && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil)
	}
	assert.True(t, store, "the store's URL is serve's own variable")
}
