package kube_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/kube/images"
	"github.com/sporectl/sporectl/kube/images/imagestest"
	"github.com/sporectl/sporectl/kube/kubetest"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// A spore on real containers: the sporectl image built by kube/images
// from the sporectl binary, imported into the node's containerd, run by
// the same kube.Runtime sporectl uses, with the echo agent. Its bridge is
// reached through the API server's pod proxy and judged by reconcile's
// own observation and health.
func TestRealNodeSpore(t *testing.T) {
	n := kubetest.NewNode(t, kubetest.NodeOptions{})
	ns := n.Namespace(t)
	ctx := t.Context()

	archive := sporectlImage(t)
	began := time.Now()
	require.NoError(t, n.ImportImage(ctx, archive))
	t.Logf("sporectl image imported in %s", time.Since(began).Round(10*time.Millisecond))

	vols := n.LocalVolumes(t, 1, "1Gi")
	rt, err := kube.New(n.Config, kube.Options{Namespace: ns, Agent: "echo"})
	require.NoError(t, err)

	s := spore("echo1")
	// The sporectl image holds the binary the pod's command runs
	// (`sporectl bridge --agent echo`); its pull policy (IfNotPresent)
	// lets the imported image run with no registry.
	s.Spec = state.Spec{Image: images.SporectlName, CPU: "500m", Memory: "256Mi", Storage: "1Gi"}
	launch := reconcile.Launch{Identity: "You are spore echo1.", Creds: creds("echo1")}
	pod := kube.ObjectName(s.ID)

	var before []bridge.Event // every line seen so far, in order
	ds := statetest.Dir(t, state.Settings{Runtime: "kube"})
	statetest.Create(t, ds, s)
	pass := reconciletest.NewPass(t, ds, reconciletest.WithRuntime(rt), reconciletest.RealClock())

	require.True(t, t.Run("wake: pod Running, bridge Up through the pod proxy, Healthy", func(t *testing.T) {
		began := time.Now()
		require.NoError(t, rt.Start(ctx, s, launch))
		o := waitHealthy(t, rt, s.ID)
		t.Logf("spore Healthy %s after Start", time.Since(began).Round(10*time.Millisecond))
		assert.Equal(t, reconcile.PodRunning, o.Pod)
		assert.Equal(t, reconcile.BridgeUp, o.Bridge)
		assert.Equal(t, 0, o.Restarts)
		st, err := bridgeClient(t, rt, s.ID).Status(ctx)
		require.NoError(t, err)
		assert.Equal(t, "echo", st.Agent)
		assert.True(t, st.Healthy)

		// What the real kubelet writes of a started container is what
		// the runtime reads as Starting: the same pod as it was a moment
		// before its readiness probe passed (its Ready condition and its
		// container's ready false) is Starting, so the pass asks its
		// bridge; ready, it is asked as ready; with only the pod's Ready
		// condition False, as the node controller leaves a pod whose node
		// stopped reporting, it is not. (Healthy may come before Ready:
		// the pod is read once Ready.)
		p := waitPod(t, n, ns, pod, "Ready", podReady)
		assert.False(t, kube.PodObservationForTest(s.ID, p).Starting, "ready")
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == corev1.PodReady {
				p.Status.Conditions[i].Status = corev1.ConditionFalse
			}
		}
		assert.False(t, kube.PodObservationForTest(s.ID, p).Starting, "cut off from its node, not coming up")
		require.Len(t, p.Status.ContainerStatuses, 1)
		p.Status.ContainerStatuses[0].Ready = false
		assert.True(t, kube.PodObservationForTest(s.ID, p).Starting, "started a moment ago, not ready yet: %+v", p.Status.ContainerStatuses)
	}), "each step needs the one before")

	require.True(t, t.Run("a prompt is answered", func(t *testing.T) {
		before = promptAndRead(t, rt, s.ID, "p1", "hello from the real node", 0)
	}), "each step needs the one before")

	require.True(t, t.Run("a read-only pass judges it Healthy and ingests the answer into the store", func(t *testing.T) {
		out, err := pass.Run(ctx, reconcile.Options{IDs: []string{s.ID}})
		require.NoError(t, err)
		require.NoError(t, out.ObserveErr)
		require.Len(t, out.Plans, 1)
		assert.Equal(t, policy.Healthy, out.Plans[0].Verdict.Effective, "%+v", out.Plans[0].Verdict)

		var stored []state.Event
		require.NoError(t, ds.View(ctx, func(tx state.Tx) (err error) {
			stored, err = tx.Events(ctx, s.ID, 0, 0)
			return err
		}))
		answer := before[len(before)-1] // the echo's result line
		found := false
		for _, e := range stored {
			if e.BridgeSeq == answer.Seq {
				found = true
				assert.JSONEq(t, string(answer.Line), string(e.Line), "the line as the bridge numbered it")
			}
		}
		assert.True(t, found, "bridge line %d in the store's %d events", answer.Seq, len(stored))
	}), "each step needs the one before")

	require.True(t, t.Run("sleep deletes the pod and keeps the claim; wake finds the same home and its lines", func(t *testing.T) {
		claim, err := n.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, pod, metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, vols[0], claim.Spec.VolumeName, "the claim bound the local volume")

		asleep, err := bridgeClient(t, rt, s.ID).Status(ctx)
		require.NoError(t, err)
		require.NotEmpty(t, asleep.SessionID)
		require.NoError(t, rt.Stop(ctx, s.ID))
		waitPodGone(t, n, ns, pod)
		kept, err := n.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, pod, metav1.GetOptions{})
		require.NoError(t, err, "sleep keeps the home")
		assert.Equal(t, claim.UID, kept.UID)
		entries, err := os.ReadDir(n.VolumePath(t, vols[0]))
		require.NoError(t, err)
		assert.NotEmpty(t, entries, "the bridge's files are in the volume on the host")

		require.NoError(t, rt.Start(ctx, s, launch))
		waitHealthy(t, rt, s.ID)
		again, err := n.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, pod, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, claim.UID, again.UID, "the same claim")
		woken, err := bridgeClient(t, rt, s.ID).Status(ctx)
		require.NoError(t, err)
		assert.Equal(t, asleep.SessionID, woken.SessionID, "the same session, kept in the home")
		all := promptAndRead(t, rt, s.ID, "p2", "hello again after a sleep", before[len(before)-1].Seq)
		require.Greater(t, len(all), len(before))
		assert.Equal(t, before, all[:len(before)], "the earlier lines, as they were")
		assert.Equal(t, before[len(before)-1].Seq+1, all[len(before)].Seq, "numbering continues")
		before = all
	}), "each step needs the one before")

	require.True(t, t.Run("the container SIGKILLed: the kubelet restarts it, counted, Healthy, no line lost", func(t *testing.T) {
		p, err := n.Client.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		require.NoError(t, err)
		require.Len(t, p.Status.ContainerStatuses, 1)
		restartsBefore := p.Status.ContainerStatuses[0].RestartCount
		pid := containerPID(t, p.Status.ContainerStatuses[0].ContainerID)
		require.NoError(t, syscall.Kill(pid, syscall.SIGKILL), "kill the bridge, pid %d", pid)

		got := waitPod(t, n, ns, pod, "restarted and Ready", func(p *corev1.Pod) bool {
			return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount > restartsBefore && podReady(p)
		})
		term := got.Status.ContainerStatuses[0].LastTerminationState.Terminated
		require.NotNil(t, term, "the kubelet kept the last termination")
		assert.EqualValues(t, 137, term.ExitCode, "SIGKILL")
		o := waitHealthy(t, rt, s.ID)
		assert.Equal(t, int(restartsBefore)+1, o.Restarts, "the restart is counted in observation")

		all := promptAndRead(t, rt, s.ID, "p3", "hello after a SIGKILL", before[len(before)-1].Seq)
		assert.Equal(t, before, all[:len(before)], "no line lost")
		assert.Equal(t, before[len(before)-1].Seq+1, all[len(before)].Seq, "numbering continues")
		before = all
	}), "each step needs the one before")

	require.True(t, t.Run("the pod deleted by someone else: Dead, then a healing pass makes a new pod on the same home", func(t *testing.T) {
		old, err := n.Client.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		require.NoError(t, err)
		deletePodAndWait(t, n, ns, pod)
		obs, _, err := reconcile.Observe(ctx, rt, []string{s.ID})
		require.NoError(t, err)
		assert.Equal(t, policy.Dead, reconcile.Health(state.Running, obs[s.ID], false).Effective, "%+v", obs[s.ID])

		out, err := pass.Run(ctx, reconcile.Options{IDs: []string{s.ID}, Heal: true})
		require.NoError(t, err)
		require.NoError(t, out.ObserveErr)
		require.Len(t, out.Plans, 1)
		require.True(t, out.Plans[0].Start, "the pass starts the dead spore")
		require.NoError(t, out.Plans[0].StartErr)
		waitHealthy(t, rt, s.ID)
		fresh, err := n.Client.CoreV1().Pods(ns).Get(ctx, pod, metav1.GetOptions{})
		require.NoError(t, err)
		assert.NotEqual(t, old.UID, fresh.UID, "a new pod")
		all := promptAndRead(t, rt, s.ID, "p4", "hello after the pod was deleted", before[len(before)-1].Seq)
		assert.Equal(t, before, all[:len(before)], "the same home: no line lost")
		assert.Equal(t, before[len(before)-1].Seq+1, all[len(before)].Seq, "numbering continues")
	}), "each step needs the one before")
}

// sporectlImage builds the sporectl binary (static, as the images need)
// and the sporectl image from it, as `make images` does.
func sporectlImage(t *testing.T) string {
	t.Helper()
	return imagestest.Sporectl(t)
}

// waitHealthy polls reconcile's observation (the runtime's pods and the
// bridge's status through the pod proxy) until the spore is Healthy.
func waitHealthy(t *testing.T, rt *kube.Runtime, id string) reconcile.Observed {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var last reconcile.Observed
	var verdict reconcile.Verdict
	for time.Now().Before(deadline) {
		obs, _, err := reconcile.Observe(t.Context(), rt, []string{id})
		if err == nil {
			last = obs[id]
			verdict = reconcile.Health(state.Running, last, false)
			if verdict.Effective == policy.Healthy {
				return last
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("spore %s not Healthy after 90 s: %s (%s) observed %+v", id, verdict.Effective, verdict.Text, last)
	return last
}

func bridgeClient(t *testing.T, rt *kube.Runtime, id string) *bridge.Client {
	t.Helper()
	ep, err := rt.Bridge(t.Context(), id)
	require.NoError(t, err)
	c, err := bridge.NewClient(ep.BaseURL, ep.Token, ep.Client)
	require.NoError(t, err)
	return c
}

// promptAndRead sends a prompt, waits until it is done and the echo's
// result past after answers it, and returns every line from the start.
func promptAndRead(t *testing.T, rt *kube.Runtime, id, promptID, text string, after uint64) []bridge.Event {
	t.Helper()
	ctx := t.Context()
	c := bridgeClient(t, rt, id)
	_, err := c.Prompt(ctx, bridge.PromptRequest{ID: promptID, From: "operator", Text: text})
	require.NoError(t, err)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		evs, err := c.Events(ctx, 0, bridge.MaxLimit, 0)
		require.NoError(t, err)
		for _, e := range evs.Events {
			if e.Seq > after && strings.Contains(string(e.Line), `"type":"result"`) && strings.Contains(string(e.Line), `"echo: `+text+`"`) {
				return evs.Events
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	evs, _ := c.Events(ctx, 0, bridge.MaxLimit, 0)
	t.Fatalf("no echo of %q after seq %d in 30 s; lines: %+v", text, after, evs.Events)
	return nil
}

func waitPodGone(t testing.TB, n *kubetest.Node, ns, name string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		_, err := n.Client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("pod %s/%s still there a minute after sleep", ns, name)
}

// containerPID finds the container's first process on the host: the one
// whose cgroup path names the container's ID (cgroupfs driver) and whose
// parent is not in that cgroup too.
func containerPID(t *testing.T, containerID string) int {
	t.Helper()
	_, cid, ok := strings.Cut(containerID, "://")
	require.True(t, ok, "container ID %q", containerID)
	inCgroup := map[int]bool{}
	procs, err := os.ReadDir("/proc")
	require.NoError(t, err)
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
		if err == nil && strings.Contains(string(b), cid) {
			inCgroup[pid] = true
		}
	}
	for pid := range inCgroup {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut after ')'.
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+1:])
		f := strings.Fields(rest)
		ppid, _ := strconv.Atoi(f[1])
		if !inCgroup[ppid] {
			return pid
		}
	}
	t.Fatalf("no process in the cgroup of container %s", cid)
	return 0
}
