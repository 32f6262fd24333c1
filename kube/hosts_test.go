package kube_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/kube/kubetest"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// Hosts against the real API server, as the Role's service account: the
// spore pods are listed with state and restarts; the metrics API is not
// served there, and the answer says so. A pod that is not ours is neither
// listed nor read.
func TestHostsWithoutMetricsAPI(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.start(t, "busy", "idle")
	require.NoError(t, e.kubelet.Schedule(ctx, "spore-busy"))
	require.NoError(t, e.kubelet.Run(ctx, "spore-busy", true))

	foreign, err := e.rt.PodSpecForTest(spore("quiet"))
	require.NoError(t, err)
	foreign.Annotations = nil // the labels but not every mark
	_, err = e.admin.CoreV1().Pods(e.ns).Create(ctx, foreign, metav1.CreateOptions{})
	require.NoError(t, err)

	l, err := e.rt.Hosts(ctx)
	require.NoError(t, err)
	require.Equal(t, "kube", l.Runtime)
	require.Equal(t, kube.MetricsAbsent, l.Metrics)
	require.Len(t, l.Hosts, 2)
	busy, idle := l.Hosts[0], l.Hosts[1]
	require.Equal(t, "spore-busy", busy.Name)
	require.Equal(t, "busy", busy.Spore)
	require.Equal(t, "Running", busy.State)
	require.Nil(t, busy.CPUCores)
	require.Nil(t, busy.MemoryBytes)
	require.Equal(t, "spore-idle", idle.Name)
	require.Equal(t, "Pending", idle.State)

	// Logs go through pods/log (allowed; no kubelet serves them here).
	_, err = e.rt.HostLogs(ctx, "spore-busy", 10)
	require.Error(t, err, "no kubelet serves logs here")
	assert.False(t, apierrors.IsForbidden(err), "the Role allows pods/log: %v", err)
	assert.False(t, errors.Is(err, state.ErrNotFound), "%v", err)

	for _, name := range []string{"spore-quiet", "spore-ghost", "kube-apiserver", "spore-Bad"} {
		_, err := e.rt.HostLogs(ctx, name, 10)
		require.True(t, errors.Is(err, state.ErrNotFound), "%s: %v", name, err)
	}
}

// An APIService registered for metrics.k8s.io whose server does not
// answer (metrics-server starting, or down): the aggregator answers 503;
// the pods are still listed and the answer says the API is not ready,
// not that it is absent. Its own API server: an aggregated API that does
// not answer fails discovery for every other test of a shared one.
func TestHostsMetricsAPINotReady(t *testing.T) {
	srv := kubetest.New(t)
	ctx := t.Context()
	admin, err := kubernetes.NewForConfig(srv.Config)
	require.NoError(t, err)
	ns := kubetest.Namespace(t, srv.Config)
	rt, err := kube.New(srv.Config, kube.Options{Namespace: ns})
	require.NoError(t, err)
	require.NoError(t, rt.Start(ctx, spore("busy"), reconcile.Launch{Creds: creds("busy")}))

	// A Service with no endpoints behind the APIService: nothing answers.
	_, err = admin.CoreV1().Services("kube-system").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "metrics-server"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(srv.Config)
	require.NoError(t, err)
	gvr := schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	_, err = dyn.Resource(gvr).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": "v1beta1.metrics.k8s.io"},
		"spec": map[string]any{
			"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": int64(100), "versionPriority": int64(100),
			"insecureSkipTLSVerify": true,
			"service":               map[string]any{"namespace": "kube-system", "name": "metrics-server", "port": int64(443)},
		},
	}}, metav1.CreateOptions{})
	require.NoError(t, err)

	// The aggregator takes the APIService up within a moment; until then
	// the group is still absent (404).
	var l reconcile.HostList
	deadline := time.Now().Add(30 * time.Second)
	for {
		l, err = rt.Hosts(ctx)
		require.NoError(t, err)
		if l.Metrics != kube.MetricsAbsent || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	require.Equal(t, kube.MetricsNotReady, l.Metrics)
	require.Len(t, l.Hosts, 1)
	require.Equal(t, "spore-busy", l.Hosts[0].Name)
	require.Nil(t, l.Hosts[0].MemoryBytes)
}
