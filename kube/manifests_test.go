package kube_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/sporectl/sporectl/kube/kubetest"
)

// renderDeploy runs kubectl's kustomize on kube/deploy, as an operator's
// `kubectl apply -k` would.
func renderDeploy(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	kubectl := kubetest.RequireBinary(t, "kubectl")
	_, file, _, _ := runtime.Caller(0)
	out, err := exec.Command(kubectl, "kustomize", filepath.Join(filepath.Dir(file), "deploy")).Output()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		t.Fatalf("kubectl kustomize: %v\n%s", err, exitErr.Stderr)
	}
	require.NoError(t, err)
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(out)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		require.NoError(t, err)
		u := &unstructured.Unstructured{}
		require.NoError(t, utilyaml.Unmarshal(doc, &u.Object))
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

type warnings struct {
	mu  sync.Mutex
	all []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.all = append(w.all, text)
}

// Every manifest is accepted by the API server's validation and admission
// (server-side dry run), the namespace enforces the restricted Pod
// Security Standard, and the workloads raise no Pod Security warning.
func TestManifestsPassServerSideDryRun(t *testing.T) {
	srv := kubetest.Shared(t)
	ctx := t.Context()
	objs := renderDeploy(t)
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
	}
	assert.Equal(t, map[string]int{"Namespace": 1, "ServiceAccount": 2, "Role": 1, "RoleBinding": 1, "ClusterRole": 2, "ClusterRoleBinding": 1,
		"Deployment": 1, "Service": 1, "CronJob": 1, "NetworkPolicy": 3}, kinds)

	w := &warnings{}
	cfg := rest.CopyConfig(srv.Config)
	cfg.WarningHandler = w
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	require.NoError(t, err)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))

	// Move everything into a namespace of this run's own, so runs sharing
	// the server (-count) do not meet each other's namespace.
	ns := fmt.Sprintf("sporectl-%d", time.Now().UnixNano())
	for _, o := range objs {
		moveNamespace(t, o, "sporectl", ns)
	}
	t.Cleanup(func() {
		_ = dyn.Resource(corev1.SchemeGroupVersion.WithResource("namespaces")).Delete(context.WithoutCancel(ctx), ns, metav1.DeleteOptions{})
	})

	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldManager: "sporectl-test"}
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		require.NoError(t, err, "%s is served", gvk)
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if ns := o.GetNamespace(); ns != "" {
			ri = dyn.Resource(m.Resource).Namespace(ns)
		}
		stored, err := ri.Create(ctx, o, dryRun)
		require.NoError(t, err, "dry-run create %s %s", o.GetKind(), o.GetName())
		assertPullsIfNotPresent(t, stored)
		if o.GetKind() == "Namespace" {
			// Admission of namespaced objects needs the namespace to exist.
			_, err = ri.Create(ctx, o, metav1.CreateOptions{})
			if !apierrors.IsAlreadyExists(err) {
				require.NoError(t, err)
			}
		}
	}
	assert.Empty(t, w.all, "the API server warned about a manifest")
}

// assertPullsIfNotPresent checks the stored object's containers, as the
// API server defaulted them: with the `:latest` tag the default is Always,
// which would pull an image imported into containerd (ctr, k3s) from the
// registry instead of using it.
func assertPullsIfNotPresent(t *testing.T, o *unstructured.Unstructured) {
	t.Helper()
	var path []string
	switch o.GetKind() {
	case "Deployment":
		path = []string{"spec", "template", "spec", "containers"}
	case "CronJob":
		path = []string{"spec", "jobTemplate", "spec", "template", "spec", "containers"}
	default:
		return
	}
	containers, found, err := unstructured.NestedSlice(o.Object, path...)
	require.NoError(t, err)
	require.True(t, found, "%s %s has containers", o.GetKind(), o.GetName())
	for _, c := range containers {
		m, ok := c.(map[string]any)
		require.True(t, ok)
		assert.Equal(t, string(corev1.PullIfNotPresent), m["imagePullPolicy"], "%s %s container %v", o.GetKind(), o.GetName(), m["name"])
	}
}

// moveNamespace renames the namespace from -> to wherever a manifest
// names it: the Namespace itself, metadata.namespace, binding subjects.
func moveNamespace(t *testing.T, o *unstructured.Unstructured, from, to string) {
	t.Helper()
	if o.GetKind() == "Namespace" && o.GetName() == from {
		o.SetName(to)
	}
	if o.GetNamespace() == from {
		o.SetNamespace(to)
	}
	// Cluster-wide objects get the namespace's name as a suffix, so runs
	// sharing an API server do not meet each other's.
	switch o.GetKind() {
	case "ClusterRole":
		o.SetName(o.GetName() + "-" + to)
	case "ClusterRoleBinding":
		o.SetName(o.GetName() + "-" + to)
		ref, _, _ := unstructured.NestedString(o.Object, "roleRef", "name")
		require.NoError(t, unstructured.SetNestedField(o.Object, ref+"-"+to, "roleRef", "name"))
	}
	subjects, _, _ := unstructured.NestedSlice(o.Object, "subjects")
	for _, s := range subjects {
		if m, ok := s.(map[string]any); ok && m["namespace"] == from {
			m["namespace"] = to
		}
	}
	if subjects != nil {
		require.NoError(t, unstructured.SetNestedSlice(o.Object, subjects, "subjects"))
	}
}

// The reconcile CronJob runs every minute and never overlaps itself.
func TestReconcileCronJobNeverOverlaps(t *testing.T) {
	for _, o := range renderDeploy(t) {
		if o.GetKind() != "CronJob" {
			continue
		}
		var cj batchv1.CronJob
		require.NoError(t, runtimeFromUnstructured(o, &cj))
		assert.Equal(t, "* * * * *", cj.Spec.Schedule)
		assert.Equal(t, batchv1.ForbidConcurrent, cj.Spec.ConcurrencyPolicy)
		assert.Equal(t, []string{"reconcile"}, cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Args)
		return
	}
	t.Fatal("no CronJob in kube/deploy")
}

// What the NetworkPolicy admits is checked on the stored policy and real
// pods in netpol_test.go.
