package kube_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// Logs passes RBAC (pods/log) and reaches the point where the API server
// asks the node; with no kubelet behind the test node, that is where it
// stops. A pod that is not ours is never read.
func TestLogsIsAllowedAndRefusesForeignPods(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.start(t, "chatty")
	require.NoError(t, e.kubelet.Schedule(ctx, "spore-chatty"))
	require.NoError(t, e.kubelet.Run(ctx, "spore-chatty", true))
	var buf bytes.Buffer
	err := e.rt.Logs(ctx, "chatty", reconcile.LogOptions{}, &buf)
	require.Error(t, err, "no kubelet serves logs here")
	assert.False(t, apierrors.IsForbidden(err), "the Role allows pods/log: %v", err)
	assert.Contains(t, err.Error(), "logs of spore chatty")

	foreign, err := e.rt.PodSpecForTest(spore("quiet"))
	require.NoError(t, err)
	foreign.Labels, foreign.Annotations = nil, nil
	_, err = e.admin.CoreV1().Pods(e.ns).Create(ctx, foreign, metav1.CreateOptions{})
	require.NoError(t, err)
	var notOwned *kube.NotOwnedError
	require.ErrorAs(t, e.rt.Logs(ctx, "quiet", reconcile.LogOptions{}, &buf), &notOwned)
}

// A bridge that exits saying why: the spec asks the kubelet to keep its
// log's end as the termination message (FallbackToLogsOnError, as stored
// by the API server), and Observe carries it while the container is
// down, not once it runs again.
func TestObserveCarriesTheBridgesLastWords(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.start(t, "lastwords")
	pod, err := e.admin.CoreV1().Pods(e.ns).Get(ctx, "spore-lastwords", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, corev1.TerminationMessageFallbackToLogsOnError, pod.Spec.Containers[0].TerminationMessagePolicy)

	require.NoError(t, e.kubelet.Schedule(ctx, "spore-lastwords"))
	require.NoError(t, e.kubelet.Run(ctx, "spore-lastwords", true))
	words := "level=INFO msg=x\nerror: listen on :8080: address already in use\n"
	require.NoError(t, e.kubelet.CrashSaying(ctx, "spore-lastwords", "Error", 1, words))
	po := e.observe(t)["lastwords"]
	assert.True(t, po.Exited)
	assert.Equal(t, "Error", po.Reason)
	assert.Equal(t, "listen on :8080: address already in use", bridge.FatalError(po.ExitLog))

	require.NoError(t, e.kubelet.Run(ctx, "spore-lastwords", true))
	po = e.observe(t)["lastwords"]
	assert.False(t, po.Exited)
	assert.Empty(t, po.ExitLog)
}

// Logs of a spore with no pod is not found (exit 4 for the command).
func TestLogsOfNoPodIsNotFound(t *testing.T) {
	e := newEnv(t)
	var buf bytes.Buffer
	require.ErrorIs(t, e.rt.Logs(t.Context(), "asleep", reconcile.LogOptions{Tail: 5}, &buf), state.ErrNotFound)
}
