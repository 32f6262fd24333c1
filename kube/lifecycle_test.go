package kube_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// Start creates the claim, secret and pod the issue lists, as stored by
// the API server (defaults and validation applied), and a second Start is
// a no-op success.
func TestStartCreatesSporeObjects(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	s := spore("alpha")
	s.Swarm = "pack"
	identity := "You are spore alpha.\nCommands you may run: none."
	require.NoError(t, e.rt.Start(ctx, s, reconcile.Launch{Identity: identity, Creds: creds("alpha")}))

	pod, err := e.admin.CoreV1().Pods(e.ns).Get(ctx, "spore-alpha", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{
		"app.kubernetes.io/managed-by": "sporectl",
		"app.kubernetes.io/component":  "spore",
		"sporectl.dev/spore":           "alpha",
		"sporectl.dev/colony":          "moss",
		"sporectl.dev/rank":            "spore",
		"sporectl.dev/swarm":           "pack",
		"sporectl.dev/egress":          "all",
	}, pod.Labels)
	assert.True(t, kube.Owned(pod.ObjectMeta, "alpha"))
	require.Len(t, pod.Spec.Containers, 1)
	c := pod.Spec.Containers[0]
	assert.Equal(t, []string{"sporectl", "bridge", "--agent", "claude"}, c.Command)
	assert.Equal(t, corev1.PullIfNotPresent, c.ImagePullPolicy, "an image imported into the node's containerd is used, not pulled again (`:latest` defaults to Always)")
	assert.True(t, c.Resources.Limits.Cpu().Equal(resource.MustParse("2")), "cpu limit %s", c.Resources.Limits.Cpu())
	assert.True(t, c.Resources.Limits.Memory().Equal(resource.MustParse("3Gi")), "memory limit %s", c.Resources.Limits.Memory())
	assert.Equal(t, c.Resources.Limits, c.Resources.Requests)
	assert.Equal(t, corev1.PodQOSGuaranteed, pod.Status.QOSClass)
	assert.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path, "a bridge on a full disk must stay ready, so the pass can ask why it is unhealthy")
	assert.Equal(t, int32(8080), c.ReadinessProbe.HTTPGet.Port.IntVal)
	assert.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
	assert.True(t, *pod.Spec.SecurityContext.RunAsNonRoot)
	assert.False(t, *pod.Spec.AutomountServiceAccountToken)
	env := map[string]corev1.EnvVar{}
	for _, v := range c.Env {
		env[v.Name] = v
		assert.NotContains(t, v.Value, creds("alpha").BridgeToken, "no token inline in the pod spec")
		assert.NotContains(t, v.Value, creds("alpha").APIToken, "no token inline in the pod spec")
	}
	assert.Equal(t, "http://sporectl-api."+e.ns+".svc", env["SPORECTL_API_URL"].Value)
	assert.Equal(t, "alpha", env["SPORECTL_SPORE_ID"].Value)
	assert.Equal(t, identity, env["SPORECTL_IDENTITY"].Value, "the identity the start was given, as it was given")
	for name, key := range map[string]string{"SPORECTL_BRIDGE_TOKEN": "bridge-token", "SPORECTL_API_TOKEN": "api-token"} {
		require.NotNil(t, env[name].ValueFrom, name)
		assert.Equal(t, "spore-alpha", env[name].ValueFrom.SecretKeyRef.Name, name)
		assert.Equal(t, key, env[name].ValueFrom.SecretKeyRef.Key, name)
	}
	// The model's key and endpoint come from the operator's Secret, which
	// may be absent (the echo agent needs none).
	require.Len(t, c.EnvFrom, 1)
	require.NotNil(t, c.EnvFrom[0].SecretRef)
	assert.Equal(t, kube.ModelSecret, c.EnvFrom[0].SecretRef.Name)
	assert.True(t, *c.EnvFrom[0].SecretRef.Optional, "a pod starts without the model's Secret")
	home := ""
	for _, m := range c.VolumeMounts {
		if m.MountPath == "/home/spore" {
			home = m.Name
		}
	}
	require.NotEmpty(t, home, "home is mounted at /home/spore")
	claimName := ""
	for _, v := range pod.Spec.Volumes {
		if v.Name == home && v.PersistentVolumeClaim != nil {
			claimName = v.PersistentVolumeClaim.ClaimName
		}
	}
	assert.Equal(t, "spore-alpha", claimName)

	claim, err := e.admin.CoreV1().PersistentVolumeClaims(e.ns).Get(ctx, "spore-alpha", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "local-path", *claim.Spec.StorageClassName)
	size := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	assert.True(t, size.Equal(resource.MustParse("5Gi")), "claim size %s", size.String())

	secret, err := e.admin.CoreV1().Secrets(e.ns).Get(ctx, "spore-alpha", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, string(secret.Data["bridge-token"]) == creds("alpha").BridgeToken, "bridge token stored")
	assert.True(t, string(secret.Data["api-token"]) == creds("alpha").APIToken, "api token stored")

	// Starting what runs already is success and changes nothing.
	require.NoError(t, e.rt.Start(ctx, s, reconcile.Launch{Creds: creds("alpha")}))
	again, err := e.admin.CoreV1().Pods(e.ns).Get(ctx, "spore-alpha", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, pod.UID, again.UID)
	assert.Equal(t, pod.ResourceVersion, again.ResourceVersion)
}

// The spec and the store's settings override the defaults.
func TestStartHonoursSpecAndSettings(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	rt, err := kube.New(e.saCfg, kube.Options{Namespace: e.ns, StorageClass: "fast", DefaultSpec: state.Spec{Memory: "6Gi"}, Agent: "echo"})
	require.NoError(t, err)
	s := spore("beta")
	s.Spec = state.Spec{CPU: "500m", Storage: "20Gi", Image: "example.org/spore:1"}
	require.NoError(t, rt.Start(ctx, s, reconcile.Launch{Creds: creds("beta")}))

	pod, err := e.admin.CoreV1().Pods(e.ns).Get(ctx, "spore-beta", metav1.GetOptions{})
	require.NoError(t, err)
	c := pod.Spec.Containers[0]
	assert.Equal(t, "example.org/spore:1", c.Image)
	assert.Equal(t, "500m", c.Resources.Limits.Cpu().String())
	assert.Equal(t, "6Gi", c.Resources.Limits.Memory().String())
	assert.Equal(t, []string{"sporectl", "bridge", "--agent", "echo"}, c.Command, "the store's agent setting reaches the pod")
	claim, err := e.admin.CoreV1().PersistentVolumeClaims(e.ns).Get(ctx, "spore-beta", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "fast", *claim.Spec.StorageClassName)
	size := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	assert.Equal(t, "20Gi", size.String())

	bad := spore("gamma")
	bad.Spec.Memory = "lots"
	err = rt.Start(ctx, bad, reconcile.Launch{Creds: creds("gamma")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "memory")
	_, err = e.admin.CoreV1().PersistentVolumeClaims(e.ns).Get(ctx, "spore-gamma", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "nothing is created for an invalid spec")
}

// Sleep deletes the pod and keeps claim and secret; wake makes a new pod
// on the same claim.
func TestSleepAndWakeKeepTheHome(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.start(t, "delta")
	require.NoError(t, e.kubelet.Schedule(ctx, "spore-delta"))
	require.NoError(t, e.kubelet.Run(ctx, "spore-delta", true))
	claim, err := e.admin.CoreV1().PersistentVolumeClaims(e.ns).Get(ctx, "spore-delta", metav1.GetOptions{})
	require.NoError(t, err)
	first, err := e.admin.CoreV1().Pods(e.ns).Get(ctx, "spore-delta", metav1.GetOptions{})
	require.NoError(t, err)

	require.NoError(t, e.rt.Stop(ctx, "delta"))
	// The pod is bound, so the server keeps it Terminating until the node
	// confirms; a second Stop meanwhile is a no-op.
	assert.Equal(t, reconcile.PodTerminating, e.observe(t)["delta"].State)
	require.NoError(t, e.rt.Stop(ctx, "delta"))
	err = e.rt.Start(ctx, spore("delta"), reconcile.Launch{Creds: creds("delta")})
	require.ErrorIs(t, err, kube.ErrTerminating, "waking while the old pod terminates must wait")
	require.NoError(t, e.kubelet.Finish(ctx, "spore-delta"))

	obs := e.observe(t)["delta"]
	assert.Equal(t, reconcile.PodAbsent, obs.State, "asleep: no pod, the claim is still observed")
	assert.True(t, obs.Owned)
	_, err = e.admin.CoreV1().Secrets(e.ns).Get(ctx, "spore-delta", metav1.GetOptions{})
	require.NoError(t, err, "sleep keeps the secret")

	e.start(t, "delta")
	woke, err := e.admin.CoreV1().Pods(e.ns).Get(ctx, "spore-delta", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotEqual(t, first.UID, woke.UID)
	after, err := e.admin.CoreV1().PersistentVolumeClaims(e.ns).Get(ctx, "spore-delta", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, claim.UID, after.UID, "wake mounts the same claim")
	assert.Equal(t, reconcile.PodPending, e.observe(t)["delta"].State)

	// Stopping a spore that has no pod at all is success.
	require.NoError(t, e.rt.Stop(ctx, "never-started"))
}

// Delete removes pod and secret; the claim only with purge.
func TestDeleteKeepsHomeUnlessPurged(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.start(t, "eps", "zeta")

	require.NoError(t, e.rt.Delete(ctx, "eps", false))
	_, err := e.admin.CoreV1().Pods(e.ns).Get(ctx, "spore-eps", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "an unbound pod goes at once: %v", err)
	_, err = e.admin.CoreV1().Secrets(e.ns).Get(ctx, "spore-eps", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "secret deleted: %v", err)
	_, err = e.admin.CoreV1().PersistentVolumeClaims(e.ns).Get(ctx, "spore-eps", metav1.GetOptions{})
	require.NoError(t, err, "the home survives a delete without purge")

	require.NoError(t, e.rt.Delete(ctx, "zeta", true))
	claim, err := e.admin.CoreV1().PersistentVolumeClaims(e.ns).Get(ctx, "spore-zeta", metav1.GetOptions{})
	if err == nil {
		// The pvc-protection finalizer holds the claim until a controller
		// sees no pod uses it; the server has accepted the delete.
		assert.NotNil(t, claim.DeletionTimestamp, "claim deletion requested")
		err := e.rt.Start(ctx, spore("zeta"), reconcile.Launch{Creds: creds("zeta")})
		require.ErrorIs(t, err, kube.ErrClaimTerminating, "no new pod on a home being purged")
		_, err = e.admin.CoreV1().Pods(e.ns).Get(ctx, "spore-zeta", metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "no pod was created: %v", err)
	} else {
		assert.True(t, apierrors.IsNotFound(err), "%v", err)
	}
	// Deleting again, or deleting what never existed, is success.
	require.NoError(t, e.rt.Delete(ctx, "zeta", true))
	require.NoError(t, e.rt.Delete(ctx, "nobody", true))
}

// A rotated token reaches the secret on the next start.
func TestStartRotatesTokens(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.start(t, "eta")
	newCreds := reconcile.Credentials{APIToken: "spt_rotated", BridgeToken: "brt_rotated"}
	require.NoError(t, e.rt.Stop(ctx, "eta"))
	require.NoError(t, e.rt.Start(ctx, spore("eta"), reconcile.Launch{Creds: newCreds}))
	secret, err := e.admin.CoreV1().Secrets(e.ns).Get(ctx, "spore-eta", metav1.GetOptions{})
	require.NoError(t, err)
	assert.True(t, string(secret.Data["bridge-token"]) == newCreds.BridgeToken, "bridge token rotated")
	assert.True(t, string(secret.Data["api-token"]) == newCreds.APIToken, "api token rotated")
}

// A Start on a spore whose pod exists changes nothing, Secret included: the
// pod read its tokens when it started.
func TestStartLeavesARunningSporeAlone(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.start(t, "theta")
	require.NoError(t, e.kubelet.Schedule(ctx, "spore-theta"))
	require.NoError(t, e.kubelet.Run(ctx, "spore-theta", true))
	before, err := e.admin.CoreV1().Secrets(e.ns).Get(ctx, "spore-theta", metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, e.rt.Start(ctx, spore("theta"), reconcile.Launch{Creds: reconcile.Credentials{APIToken: "spt_other", BridgeToken: "brt_other"}}))
	after, err := e.admin.CoreV1().Secrets(e.ns).Get(ctx, "spore-theta", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, before.ResourceVersion, after.ResourceVersion, "the running spore's tokens were rotated under it")
}

// Waking a spore whose pod was evicted replaces the pod: it never runs
// again, so leaving it would report a wake that did nothing.
func TestStartReplacesAnEvictedPod(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	e.start(t, "iota")
	require.NoError(t, e.kubelet.Schedule(ctx, "spore-iota"))
	require.NoError(t, e.kubelet.Run(ctx, "spore-iota", true))
	require.NoError(t, e.kubelet.Evict(ctx, "spore-iota"))
	old, err := e.admin.CoreV1().Pods(e.ns).Get(ctx, "spore-iota", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, corev1.PodFailed, old.Status.Phase)

	// The API server removes a terminal pod at once (no grace period), so
	// the replacement is created in the same start.
	require.NoError(t, e.rt.Start(ctx, spore("iota"), reconcile.Launch{Creds: creds("iota")}))
	fresh, err := e.admin.CoreV1().Pods(e.ns).Get(ctx, "spore-iota", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotEqual(t, old.UID, fresh.UID, "a new pod replaced the evicted one")
}
