package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/kube/kubetest"
	"github.com/sporectl/sporectl/state/statetest"
)

// TestKubeLifecycle drives a spore through the kube runtime with the real
// binary against a real API server: a test kubelet moves the pod, and a
// real bridge (echo agent) answers at the pod's address, inside a network
// namespace, through the API server's pod proxy.
func TestKubeLifecycle(t *testing.T) {
	srv := kubetest.New(t)
	ns := kubetest.Namespace(t, srv.Config)
	host := kubetest.NewPodHost(t)
	cs, err := kubernetes.NewForConfig(srv.Config)
	require.NoError(t, err)
	ctx := context.Background()
	kubelet := &kubetest.Kubelet{Client: cs, Namespace: ns, IP: host.IP}

	store := filepath.Join(t.TempDir(), "store")
	statetest.CheckDirOnCleanup(t, store)
	kctl := func(args ...string) *exec.Cmd {
		cmd := sporectl(store, args...)
		cmd.Env = append(cmd.Env, "KUBECONFIG="+srv.Kubeconfig)
		return cmd
	}
	ok := func(args ...string) {
		t.Helper()
		out, err := kctl(args...).CombinedOutput()
		require.NoError(t, err, "sporectl %v: %s", args, out)
	}
	statusOf := func() (statusDoc, int) {
		t.Helper()
		cmd := kctl("status", "-o", "json", "k-1")
		out, _ := cmd.Output()
		var doc statusDoc
		require.NoError(t, jsonUnmarshal(out, &doc), "%s", out)
		require.Len(t, doc.Spores, 1)
		return doc, cmd.ProcessState.ExitCode()
	}

	ok("init", "--runtime", "kube", "-n", ns, "--agent", "echo")
	ok("create", "k-1", "--wake", "--memory", "1Gi")
	pod, err := cs.CoreV1().Pods(ns).Get(ctx, "spore-k-1", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "1Gi", pod.Spec.Containers[0].Resources.Limits.Memory().String())
	require.Contains(t, pod.Spec.Containers[0].Command, "echo", "init --agent echo reaches the pod")

	doc, code := statusOf()
	require.Equal(t, 3, code)
	require.Equal(t, "Pending", doc.Spores[0].Observed.Pod)
	require.Equal(t, "Suspect", doc.Spores[0].Effective)

	// The bridge the pod would run, at the pod's address, with the token
	// from the spore's Secret.
	secret, err := cs.CoreV1().Secrets(ns).Get(ctx, "spore-k-1", metav1.GetOptions{})
	require.NoError(t, err)
	bctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	b := host.Command(bctx, binPath, "bridge", "--addr", host.IP+":8080", "--home", t.TempDir(), "--agent", "echo")
	b.Env = append(os.Environ(), "SPORECTL_BRIDGE_TOKEN="+string(secret.Data[kube.SecretKeyBridgeToken]))
	require.NoError(t, b.Start())
	t.Cleanup(func() { cancel(); _ = b.Wait() })

	require.NoError(t, kubelet.Schedule(ctx, "spore-k-1"))
	require.NoError(t, kubelet.Run(ctx, "spore-k-1", true))
	require.Eventually(t, func() bool {
		doc, code := statusOf()
		return code == 0 && doc.Spores[0].Effective == "Healthy"
	}, 15*time.Second, 100*time.Millisecond, "status should reach the bridge through the pod proxy")
	doc, _ = statusOf()
	require.Equal(t, "Up", doc.Spores[0].Observed.Bridge)
	require.Equal(t, "idle", doc.Spores[0].Observed.Activity)

	// Waking the running spore again must not rotate the tokens its pod
	// read at start: the bridge still answers.
	ok("wake", "k-1")
	doc, code = statusOf()
	require.Equal(t, 0, code)
	require.Equal(t, "Healthy", doc.Spores[0].Effective)

	require.NoError(t, kubelet.Crash(ctx, "spore-k-1", "OOMKilled", 137))
	doc, code = statusOf()
	require.Equal(t, 3, code)
	require.Equal(t, "OOMKilled", doc.Spores[0].Reason)

	ok("sleep", "k-1")
	doc, code = statusOf()
	require.Equal(t, 0, code)
	require.Equal(t, "Paused", doc.Spores[0].Effective)
	require.NoError(t, kubelet.Finish(ctx, "spore-k-1"))
	_, err = cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "spore-k-1", metav1.GetOptions{})
	require.NoError(t, err, "sleep keeps the home")

	ok("stop", "k-1")
	claim, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "spore-k-1", metav1.GetOptions{})
	require.NoError(t, err)

	// A plain delete keeps the home; a kept home is no orphan, and creating
	// the id again adopts it.
	ok("delete", "k-1")
	all := kctl("status", "-o", "json")
	out, err := all.Output()
	require.NoError(t, err, "status after a plain delete: %s", out)
	require.NotContains(t, string(out), "orphans")
	ok("create", "k-1", "--wake")
	again, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "spore-k-1", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, claim.UID, again.UID, "the same home")

	ok("delete", "k-1", "--purge-home")
	require.Eventually(t, func() bool {
		pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "spore-k-1", metav1.GetOptions{})
		return apierrors.IsNotFound(err) || (err == nil && pvc.DeletionTimestamp != nil)
	}, 10*time.Second, 100*time.Millisecond, "--purge-home deletes the claim")
	_, err = cs.CoreV1().Secrets(ns).Get(ctx, "spore-k-1", metav1.GetOptions{})
	require.True(t, apierrors.IsNotFound(err), "delete removes the secret")
	ok("check")
}
