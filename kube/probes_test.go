package kube_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/sporectl/sporectl/kube"
)

// What of the spore pod's spec a wake waits on: its readiness probe asks
// every second, so the pod is Ready within about a second of its bridge
// listening rather than at the next tick of a 5 s probe, and still stays
// Ready through 15 s of a bridge not answering; the kubelet gives the
// home to the spore's group only when its root is not, rather than walking
// every file of it on every wake.
func TestSporePodWakeSpec(t *testing.T) {
	pod, err := kube.Options{Namespace: "sporectl"}.PodFor(spore("alpha"), "")
	require.NoError(t, err)
	c := pod.Spec.Containers[0]

	r := c.ReadinessProbe
	require.NotNil(t, r)
	require.NotNil(t, r.HTTPGet)
	assert.Equal(t, "/readyz", r.HTTPGet.Path, "a bridge on a full disk must stay ready, so the pass can ask why it is unhealthy")
	assert.Equal(t, int32(kube.BridgePort), r.HTTPGet.Port.IntVal)
	assert.Equal(t, int32(1), r.PeriodSeconds, "the kubelet's shortest period: a woken pod is Ready at the first tick after its bridge listens")
	assert.Zero(t, r.InitialDelaySeconds, "the bridge listens within milliseconds of its start")
	assert.Equal(t, 15*time.Second, time.Duration(r.PeriodSeconds)*time.Duration(r.FailureThreshold)*time.Second,
		"a bridge busy for a moment is not taken out of the pass: unready after 15 s, as before")
	assert.Nil(t, c.StartupProbe, "a startup probe in front of the readiness probe delays Ready by a hop of the kubelet's status")
	assert.Nil(t, c.LivenessProbe, "nothing kills a running bridge that is slow to answer; the pass judges it")

	sc := pod.Spec.SecurityContext
	require.NotNil(t, sc.FSGroup)
	require.NotNil(t, sc.FSGroupChangePolicy, "the default (Always) walks every file of the home on every wake")
	assert.Equal(t, corev1.FSGroupChangeOnRootMismatch, *sc.FSGroupChangePolicy)
}
