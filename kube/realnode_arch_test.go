package kube_test

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/kube/images"
	"github.com/sporectl/sporectl/kube/kubetest"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// The service-account directory the kubelet mounts into a container.
const saDir = "var/run/secrets/kubernetes.io/serviceaccount"

// realSpores starts spores on a real node as the runtime makes them (the
// sporectl image, the echo agent), each on a local volume, and waits for
// their pods to be Running and Ready. It returns the pods by spore id.
func realSpores(t *testing.T, n *kubetest.Node, ns string, spores ...state.Spore) map[string]*corev1.Pod {
	t.Helper()
	return realSporesWith(t, n, kube.Options{Namespace: ns}, spores...)
}

// realSporesWith is realSpores with the runtime's options (its namespace
// among them; the agent is always the echo agent).
func realSporesWith(t *testing.T, n *kubetest.Node, o kube.Options, spores ...state.Spore) map[string]*corev1.Pod {
	t.Helper()
	ctx := t.Context()
	ns := o.Namespace
	require.NoError(t, n.ImportImage(ctx, sporectlImage(t)))
	n.LocalVolumes(t, len(spores), "1Gi")
	o.Agent = "echo"
	rt, err := kube.New(n.Config, o)
	require.NoError(t, err)
	for _, s := range spores {
		s.Spec = state.Spec{Image: images.SporectlName, CPU: "250m", Memory: "128Mi", Storage: "1Gi"}
		require.NoError(t, rt.Start(ctx, s, reconcile.Launch{Identity: "You are spore " + s.ID + ".", Creds: creds(s.ID)}))
	}
	pods := map[string]*corev1.Pod{}
	for _, s := range spores {
		pods[s.ID] = waitPod(t, n, ns, kube.ObjectName(s.ID), "Running and Ready", func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodRunning && podReady(p) && len(p.Status.ContainerStatuses) == 1
		})
	}
	return pods
}

// podPID is the main process of the pod's one container, as the node runs it.
func podPID(t *testing.T, p *corev1.Pod) int {
	t.Helper()
	require.Len(t, p.Status.ContainerStatuses, 1)
	return containerPID(t, p.Status.ContainerStatuses[0].ContainerID)
}

// On a real node the [arch]'s pod carries its account's token and a plain
// spore's none. The token is read as the container sees it: through
// /proc/PID/root, the container's own mount namespace, where the kubelet
// mounted it (neither image has a shell or a Kubernetes client to read it
// with, and exec would need one). It is then used from the test against
// the API server: what is proven is what the token in the container may
// do, not the path a packet takes (realnode_netpol_test.go is about
// packets, the [arch]'s to the API server among them).
func TestRealNodeArchReadsTheClusterButSecrets(t *testing.T) {
	n := kubetest.NewNode(t, kubetest.NodeOptions{})
	ns := n.Namespace(t)
	ctx := t.Context()
	applyDeployKinds(t, n.Server, n.Client, ns, "ServiceAccount", "ClusterRole", "ClusterRoleBinding")
	pods := realSpores(t, n, ns, withRank(spore("arch"), state.RankArch, ""), spore("plain"))

	var token []byte
	require.True(t, t.Run("the [arch]'s container holds its account's token, readable by the spore's user", func(t *testing.T) {
		p := pods["arch"]
		assert.Equal(t, kube.ArchServiceAccount, p.Spec.ServiceAccountName)
		dir := filepath.Join(fmt.Sprintf("/proc/%d/root", podPID(t, p)), saDir)
		var err error
		token, err = os.ReadFile(filepath.Join(dir, "token"))
		require.NoError(t, err, "the kubelet mounted the token into the [arch]'s container")
		require.NotEmpty(t, token)
		got, err := os.ReadFile(filepath.Join(dir, "namespace"))
		require.NoError(t, err)
		assert.Equal(t, ns, string(got))
		_, err = os.Stat(filepath.Join(dir, "ca.crt"))
		assert.NoError(t, err, "and the cluster's CA")

		st, err := os.Stat(filepath.Join(dir, "token"))
		require.NoError(t, err)
		sys := st.Sys().(*syscall.Stat_t)
		readable := (sys.Uid == kube.SporeUID && st.Mode().Perm()&0o400 != 0) || (sys.Gid == kube.SporeUID && st.Mode().Perm()&0o040 != 0)
		assert.True(t, readable, "the bridge (uid %d) can read its token: owner %d:%d mode %s", kube.SporeUID, sys.Uid, sys.Gid, st.Mode().Perm())
	}), "the next steps use the token")

	t.Run("with that token the [arch] lists pods everywhere and is refused secrets", func(t *testing.T) {
		cfg := rest.AnonymousClientConfig(n.Config)
		cfg.BearerToken = string(token)
		as, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)

		who, err := as.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Equal(t, "system:serviceaccount:"+ns+":"+kube.ArchServiceAccount, who.Status.UserInfo.Username)

		all, err := as.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		require.NoError(t, err, "the [arch] lists pods in every namespace")
		var names []string
		for _, p := range all.Items {
			names = append(names, p.Namespace+"/"+p.Name)
		}
		assert.Contains(t, names, ns+"/"+kube.ObjectName("plain"))
		assert.Contains(t, names, ns+"/"+kube.ObjectName("arch"))
		_, err = as.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		assert.NoError(t, err, "and the node")

		_, err = as.CoreV1().Secrets(ns).Get(ctx, kube.ObjectName("plain"), metav1.GetOptions{})
		assert.True(t, apierrors.IsForbidden(err), "another spore's Secret is refused: %v", err)
		_, err = as.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
		assert.True(t, apierrors.IsForbidden(err), "listing secrets is refused: %v", err)
		err = as.CoreV1().Pods(ns).Delete(ctx, kube.ObjectName("plain"), metav1.DeleteOptions{})
		assert.True(t, apierrors.IsForbidden(err), "the [arch] reads and never changes: %v", err)
		_, err = as.CoreV1().Pods(ns).GetLogs(kube.ObjectName("plain"), &corev1.PodLogOptions{}).DoRaw(ctx)
		assert.True(t, apierrors.IsForbidden(err), "logs are refused (a spore's log may hold a token): %v", err)
	})

	t.Run("a plain spore's container has no token at all", func(t *testing.T) {
		p := pods["plain"]
		assert.Equal(t, "default", p.Spec.ServiceAccountName, "the namespace's default account, which reads nothing")
		root := fmt.Sprintf("/proc/%d/root", podPID(t, p))
		_, err := os.Stat(root) // the container's root is there to look in
		require.NoError(t, err)
		_, err = os.Stat(filepath.Join(root, saDir))
		assert.True(t, os.IsNotExist(err), "no service-account directory in the container: %v", err)
		for _, v := range p.Spec.Volumes {
			assert.Nil(t, v.Projected, "no projected token volume: %s", v.Name)
		}
	})
}
