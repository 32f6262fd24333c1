package kube_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sporectl/sporectl/kube"
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
