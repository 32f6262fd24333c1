package kube_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/kube/kubetest"
	"github.com/sporectl/sporectl/reconcile"
)

// One real node for the whole table: it takes seconds to come up and is
// the machine's only one. The last step stops it and checks the machine
// is as it was.
func TestRealNode(t *testing.T) {
	n := kubetest.NewNode(t, kubetest.NodeOptions{})
	t.Logf("node Ready %s after StartNode was called", n.ReadyAfter.Round(10*time.Millisecond))
	ns := n.Namespace(t)

	t.Run("ready with the pinned versions", func(t *testing.T) {
		node, err := n.Client.CoreV1().Nodes().Get(t.Context(), n.Name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, "v1.37.2", node.Status.NodeInfo.KubeletVersion)
		assert.Equal(t, "containerd://2.4.2", node.Status.NodeInfo.ContainerRuntimeVersion)
		var internal string
		for _, a := range node.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				internal = a.Address
			}
		}
		assert.Equal(t, n.IP, internal, "the kubelet serves on the bridge's address")
	})

	t.Run("a pod from a local image runs, logs and is reached through the pod proxy", func(t *testing.T) {
		pod := probePod("web", "serve")
		pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
			PeriodSeconds: 1,
		}
		began := time.Now()
		created, err := n.Client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{})
		require.NoError(t, err)
		got := waitPod(t, n, ns, created.Name, "Running and Ready", func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodRunning && podReady(p)
		})
		t.Logf("pod Running and Ready %s after it was created", time.Since(began).Round(10*time.Millisecond))
		_, subnet, err := net.ParseCIDR(n.Subnet)
		require.NoError(t, err)
		assert.True(t, subnet.Contains(net.ParseIP(got.Status.PodIP)), "pod IP %s in %s", got.Status.PodIP, n.Subnet)

		logs, err := n.Client.CoreV1().Pods(ns).GetLogs(got.Name, &corev1.PodLogOptions{}).DoRaw(t.Context())
		require.NoError(t, err, "logs through the API server and the kubelet")
		assert.Contains(t, string(logs), "nodeprobe serving on :8080")

		body, err := n.Client.CoreV1().Pods(ns).ProxyGet("http", got.Name, "8080", "/", nil).DoRaw(t.Context())
		require.NoError(t, err, "the API server's pod proxy")
		assert.Equal(t, "hello from nodeprobe on web\n", string(body))
	})

	t.Run("past its memory limit a container is OOMKilled by the kernel", func(t *testing.T) {
		pod := probePod("hog", "hog")
		pod.Spec.RestartPolicy = corev1.RestartPolicyNever
		pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("32Mi")}
		_, err := n.Client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{})
		require.NoError(t, err)
		got := waitPod(t, n, ns, "hog", "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
		require.Len(t, got.Status.ContainerStatuses, 1)
		term := got.Status.ContainerStatuses[0].State.Terminated
		require.NotNil(t, term, "the container terminated")
		assert.Equal(t, "OOMKilled", term.Reason)
		assert.EqualValues(t, 137, term.ExitCode, "SIGKILL from the cgroup's OOM killer")

		obs := kube.PodObservationForTest("hog", got)
		assert.Equal(t, reconcile.PodFailed, obs.State)
		assert.Equal(t, "OOMKilled", obs.Reason, "what status and reconcile see")
	})

	t.Run("a claim's files survive the pod being deleted and recreated", func(t *testing.T) {
		vols := n.LocalVolumes(t, 1, "1Gi")
		class := kubetest.LocalStorageClass
		_, err := n.Client.CoreV1().PersistentVolumeClaims(ns).Create(t.Context(), &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "home"},
			Spec: corev1.PersistentVolumeClaimSpec{
				StorageClassName: &class,
				AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}, metav1.CreateOptions{})
		require.NoError(t, err)

		homePod := func() *corev1.Pod {
			p := probePod("home", "home")
			uid, gid := int64(1000), int64(1000)
			// Not root: writing the home proves the kubelet applied
			// fsGroup to the local volume.
			p.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: &uid, RunAsGroup: &gid, FSGroup: &gid}
			c := &p.Spec.Containers[0]
			c.Env = []corev1.EnvVar{{Name: "HOME", Value: "/home/probe"}}
			c.VolumeMounts = []corev1.VolumeMount{{Name: "home", MountPath: "/home/probe"}}
			p.Spec.Volumes = []corev1.Volume{{Name: "home", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "home"},
			}}}
			return p
		}
		for boot, want := range []string{"boot 1\n", "boot 1\nboot 2\n"} {
			_, err := n.Client.CoreV1().Pods(ns).Create(t.Context(), homePod(), metav1.CreateOptions{})
			require.NoError(t, err, "boot %d", boot+1)
			waitPod(t, n, ns, "home", "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
			// Running is the container started, not its first write: wait
			// for the log to hold as much as it should, then compare.
			var logs []byte
			deadline := time.Now().Add(30 * time.Second)
			for {
				logs, err = n.Client.CoreV1().Pods(ns).GetLogs("home", &corev1.PodLogOptions{}).DoRaw(t.Context())
				require.NoError(t, err)
				if len(logs) >= len(want) || time.Now().After(deadline) {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
			assert.True(t, strings.HasPrefix(string(logs), want), "boot %d's log: %q", boot+1, logs)
			deletePodAndWait(t, n, ns, "home")
		}
		pvc, err := n.Client.CoreV1().PersistentVolumeClaims(ns).Get(t.Context(), "home", metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, vols[0], pvc.Spec.VolumeName, "the claim bound the local volume")
		b, err := os.ReadFile(filepath.Join(n.VolumePath(t, vols[0]), "history"))
		require.NoError(t, err)
		assert.Equal(t, "boot 1\nboot 2\n", string(b), "on the host, in the volume's directory")
	})

	t.Run("teardown leaves no process, mount, link, netns, cgroup or sysctl", func(t *testing.T) {
		// A running pod at teardown: the kubelet and containerd must
		// unwind it, not leave its sandbox behind.
		_, err := n.Client.CoreV1().Pods(ns).Create(t.Context(), probePod("left-running", "serve"), metav1.CreateOptions{})
		require.NoError(t, err)
		waitPod(t, n, ns, "left-running", "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
		began := time.Now()
		require.NoError(t, n.Stop())
		t.Logf("teardown took %s", time.Since(began).Round(10*time.Millisecond))
		assert.Empty(t, n.Leftovers())
		out, err := exec.Command("ip", "link", "show", "kubetest0").CombinedOutput()
		assert.Error(t, err, "the bridge is gone: %s", out)
	})
}

// A node whose test binary is killed (a timeout, a crash) cannot tear
// itself down; the next node puts the machine back as it was before the
// dead one: its pods' processes, mounts, bridge, cgroups, and the sysctls
// its kubelet changed.
func TestRealNodeKilledIsCleanedByTheNext(t *testing.T) {
	if os.Getenv("KUBETEST_NODE_CRASH_CHILD") == "1" {
		n := kubetest.NewNode(t, kubetest.NodeOptions{})
		ns := n.Namespace(t)
		_, err := n.Client.CoreV1().Pods(ns).Create(t.Context(), probePod("orphan", "serve"), metav1.CreateOptions{})
		require.NoError(t, err)
		waitPod(t, n, ns, "orphan", "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
		fmt.Println("NODE-UP")
		time.Sleep(10 * time.Minute) // killed by the parent long before
		return
	}
	if _, err := kubetest.NodeBinary("kubelet"); err != nil && os.Getenv("CI") == "" {
		t.Skip(err)
	}
	before := readSysctls(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestRealNodeKilledIsCleanedByTheNext$", "-test.v", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), "KUBETEST_NODE_CRASH_CHILD=1")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	up := make(chan struct{})
	lines := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
			if sc.Text() == "NODE-UP" {
				close(up)
			}
		}
		close(lines)
	}()
	select {
	case <-up:
	case <-time.After(3 * time.Minute):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		var all []string
		for l := range lines {
			all = append(all, l)
		}
		t.Fatalf("the first node never came up:\n%s", strings.Join(all, "\n"))
	}
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	// Its processes die with it (they are killed with their parent), the
	// rest stays: that is what the next node must clean.
	_, err = exec.Command("ip", "link", "show", "kubetest0").CombinedOutput()
	require.NoError(t, err, "the dead node's bridge is still there")
	kubeletValues := map[string]string{"vm/overcommit_memory": "1", "kernel/panic": "10", "kernel/panic_on_oops": "1"}
	if !assert.ObjectsAreEqual(kubeletValues, before) {
		require.Equal(t, kubeletValues, readSysctls(t), "the dead node's kubelet changed the sysctls")
	}

	n := kubetest.NewNode(t, kubetest.NodeOptions{})
	require.NoError(t, n.Stop())
	assert.Empty(t, n.Leftovers())
	assert.Equal(t, before, readSysctls(t), "the sysctls as they were before either node")
	_, err = exec.Command("ip", "link", "show", "kubetest0").CombinedOutput()
	assert.Error(t, err, "no bridge")
	stale, _ := filepath.Glob(filepath.Join(os.TempDir(), "kubetest-node-*"))
	assert.Empty(t, stale, "the dead node's directory is gone")
}

func readSysctls(t *testing.T) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, k := range []string{"vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops"} {
		b, err := os.ReadFile("/proc/sys/" + k)
		require.NoError(t, err)
		m[k] = strings.TrimSpace(string(b))
	}
	return m
}

// Without a way to have a node (here: no binaries), CI fails the test and
// a developer's run skips it with the reason.
func TestRealNodeUnavailableFailsInCI(t *testing.T) {
	if os.Getenv("KUBETEST_NODE_CHILD") == "1" {
		kubetest.NewNode(t, kubetest.NodeOptions{})
		return
	}
	run := func(ci string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRealNodeUnavailableFailsInCI$", "-test.v")
		cmd.Env = append(os.Environ(), "KUBETEST_NODE_CHILD=1", "CI="+ci, kubetest.EnvNodeBinDir+"="+t.TempDir())
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("true")
	require.Error(t, err, "must fail in CI:\n%s", out)
	assert.Contains(t, out, "--- FAIL")
	assert.Contains(t, out, "no real node can be had")
	out, err = run("")
	require.NoError(t, err, "must skip outside CI:\n%s", out)
	assert.Contains(t, out, "--- SKIP")
	assert.Contains(t, out, "real-node.sh", "the skip says how to get the binaries")
}

func probePod(name string, mode string) *corev1.Pod {
	grace := int64(1)
	no := false
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken:  &no,
			Containers: []corev1.Container{{
				Name:            "probe",
				Image:           kubetest.ProbeImage,
				ImagePullPolicy: corev1.PullNever,
				Args:            []string{mode},
			}},
		},
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitPod polls until ok(pod) or a minute passes; on timeout it fails
// with the pod's status, its events and the kubelet's last words.
func waitPod(t testing.TB, n *kubetest.Node, ns, name, what string, ok func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	var last *corev1.Pod
	for ctx.Err() == nil {
		p, err := n.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			last = p
			if ok(p) {
				return p
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	var events strings.Builder
	if evs, err := n.Client.CoreV1().Events(ns).List(context.WithoutCancel(ctx), metav1.ListOptions{}); err == nil {
		for _, e := range evs.Items {
			fmt.Fprintf(&events, "%s %s: %s\n", e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
	status := "no pod"
	if last != nil {
		status = fmt.Sprintf("%+v", last.Status)
	}
	t.Fatalf("pod %s/%s not %s after a minute\nstatus: %s\nevents:\n%s\nkubelet:\n%s", ns, name, what, status, events.String(), n.NodeLogTail("kubelet"))
	return nil
}

func deletePodAndWait(t testing.TB, n *kubetest.Node, ns, name string) {
	t.Helper()
	require.NoError(t, n.Client.CoreV1().Pods(ns).Delete(t.Context(), name, metav1.DeleteOptions{}))
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		_, err := n.Client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("pod %s/%s still there a minute after its deletion", ns, name)
}

// BenchmarkRealNodePodRunning measures, on a real node, one pod from
// Create to Running and Ready (readiness probe every second) and back to
// gone; the node's own start to Ready is reported once as node-ready-s.
func BenchmarkRealNodePodRunning(b *testing.B) {
	n := kubetest.NewNode(b, kubetest.NodeOptions{})
	ns := n.Namespace(b)
	var running time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		pod := probePod(fmt.Sprintf("bench-%d", i), "serve")
		pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
			PeriodSeconds: 1,
		}
		began := time.Now()
		_, err := n.Client.CoreV1().Pods(ns).Create(b.Context(), pod, metav1.CreateOptions{})
		require.NoError(b, err)
		waitPod(b, n, ns, pod.Name, "Running and Ready", func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodRunning && podReady(p)
		})
		running += time.Since(began)
		b.StopTimer()
		deletePodAndWait(b, n, ns, pod.Name)
		b.StartTimer()
	}
	b.ReportMetric(running.Seconds()/float64(b.N), "running+ready-s/pod")
	b.ReportMetric(n.ReadyAfter.Seconds(), "node-ready-s") // after ResetTimer, which drops metrics
}
