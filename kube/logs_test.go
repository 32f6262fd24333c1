package kube_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/reconcile"
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
