package main

// The whole-spore row of the recovery table on the kube runtime, against
// the real kube-apiserver harness (kube/kubetest): a test kubelet moves
// pods, and a real bridge (echo agent) runs at the pod's address on a
// directory that stands for the spore's claim.

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/kube/kubetest"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// podBridge is the bridge a pod runs: our binary inside the pod network,
// on the volume of the spore's claim.
type podBridge struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func (b *podBridge) kill(t *testing.T) {
	t.Helper()
	_ = b.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-b.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the pod's bridge survived SIGKILL")
	}
}

// kubeSpore is one spore on the kube runtime against the real API server
// harness: the CLI rig on a fresh store, a test kubelet, and a directory
// that stands for the spore's claim.
type kubeSpore struct {
	r       *rig
	cs      kubernetes.Interface
	ns      string
	ctx     context.Context
	kubelet *kubetest.Kubelet
	host    *kubetest.PodHost
	id      string
	name    string
	volume  string
}

func newKubeSpore(t *testing.T, id string) *kubeSpore {
	t.Helper()
	srv := kubetest.New(t)
	ns := kubetest.Namespace(t, srv.Config)
	host := kubetest.NewPodHost(t)
	cs, err := kubernetes.NewForConfig(srv.Config)
	require.NoError(t, err)
	ctx := context.Background()
	k := &kubeSpore{cs: cs, ns: ns, ctx: ctx, host: host, id: id, name: kube.ObjectName(id), volume: t.TempDir(),
		kubelet: &kubetest.Kubelet{Client: cs, Namespace: ns, IP: host.IP}}
	store := filepath.Join(t.TempDir(), "store")
	statetest.CheckDirOnCleanup(t, store)
	k.r = &rig{t: t, store: store, root: store, env: []string{"KUBECONFIG=" + srv.Kubeconfig},
		homeOf: func(string) string { return k.volume },
		bridgeOf: func(string) (*bridge.Client, error) {
			sec, err := cs.CoreV1().Secrets(ns).Get(ctx, k.name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			return bridge.NewClient("http://"+host.IP+":8080", string(sec.Data[kube.SecretKeyBridgeToken]), &http.Client{Timeout: 5 * time.Second})
		}}
	k.r.ok(append([]string{"init", "--runtime", "kube", "-n", ns}, echoInit()...)...)
	t.Cleanup(func() { _ = k.r.cmd("delete", id).Run() })
	return k
}

// token is the bridge token in the spore's Secret.
func (k *kubeSpore) token() string {
	k.r.t.Helper()
	sec, err := k.cs.CoreV1().Secrets(k.ns).Get(k.ctx, k.name, metav1.GetOptions{})
	require.NoError(k.r.t, err)
	return string(sec.Data[kube.SecretKeyBridgeToken])
}

// runPod plays the node for the spore's current pod: it starts the
// bridge with the pod's Secret on the claim's volume, then reports the
// pod scheduled and running.
func (k *kubeSpore) runPod() *podBridge {
	t := k.r.t
	t.Helper()
	b := k.host.Command(context.Background(), binPath, "bridge", "--addr", k.host.IP+":8080", "--home", k.volume, "--agent", "echo")
	b.Env = append(os.Environ(), "SPORECTL_BRIDGE_TOKEN="+k.token())
	logf, err := os.OpenFile(filepath.Join(t.TempDir(), "bridge.log"), os.O_CREATE|os.O_WRONLY, 0o600)
	require.NoError(t, err)
	b.Stdout, b.Stderr = logf, logf
	require.NoError(t, b.Start())
	pb := &podBridge{cmd: b, done: make(chan struct{})}
	go func() { _ = b.Wait(); logf.Close(); close(pb.done) }()
	t.Cleanup(func() { _ = b.Process.Kill(); <-pb.done })
	require.NoError(t, k.kubelet.Schedule(k.ctx, k.name))
	require.NoError(t, k.kubelet.Run(k.ctx, k.name, true))
	return pb
}

// pod is the spore's pod as the API server has it.
func (k *kubeSpore) pod() *corev1.Pod {
	k.r.t.Helper()
	p, err := k.cs.CoreV1().Pods(k.ns).Get(k.ctx, k.name, metav1.GetOptions{})
	require.NoError(k.r.t, err)
	return p
}

// TestRecoveryKubeWholeSpore — row "the whole spore (pod OOMKilled / pod
// deleted)" on Kubernetes: the pod's bridge dies with its pod, first as
// the kubelet reports it OOMKilled (pod Failed), then as someone deletes
// the pod. Each time status says Dead (reason OOMKilled; a pod still
// terminating is waited on, never replaced), reconcile creates a new pod
// on the same claim, the new bridge (on the same volume) carries on the
// same log and session, the lines numbered before the pod died are
// ingested, and a prompt sent while it was dead is delivered once.
func TestRecoveryKubeWholeSpore(t *testing.T) {
	k := newKubeSpore(t, "rec-kube")
	r, cs, ns, ctx, kubelet, id, name := k.r, k.cs, k.ns, k.ctx, k.kubelet, k.id, k.name
	runPod, pod := k.runPod, k.pod
	// newPod waits until reconcile has created a pod other than old, and
	// checks that it mounts the same claim.
	newPod := func(old types.UID) *corev1.Pod {
		t.Helper()
		var p *corev1.Pod
		require.Eventually(t, func() bool {
			got, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			p = got
			return err == nil && got.UID != old && got.DeletionTimestamp == nil
		}, 30*time.Second, 50*time.Millisecond, "no new pod")
		var claim string
		for _, v := range p.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				claim = v.PersistentVolumeClaim.ClaimName
			}
		}
		require.Equal(t, name, claim, "the new pod mounts the spore's claim")
		return p
	}
	claimUID := func() types.UID {
		t.Helper()
		c, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		return c.UID
	}

	r.ok("create", id, "--wake")
	claim := claimUID()
	b := runPod()
	r.waitHealthy(id, 30*time.Second)
	files := map[string]string{"work/notes.txt": "written before the pod died\n"}
	for rel, c := range files {
		r.writeHome(id, rel, c)
	}
	var prompts []sent
	send := func(text, want string) {
		t.Helper()
		pid, st := r.prompt(id, text)
		require.Equal(t, want, st)
		prompts = append(prompts, sent{id: pid, text: text, acked: true})
	}

	// 1. The kubelet reports the pod OOMKilled; its bridge is gone.
	send("before the OOM kill", "delivered")
	r.waitIdle(id, 10*time.Second)
	numbered := len(r.bridgeLog(id))
	sp, _ := r.record(id)
	require.Less(t, sp.BridgeSeq, uint64(numbered), "lines only the bridge's log has yet")
	old := pod().UID
	b.kill(t)
	require.NoError(t, kubelet.Fail(ctx, name, "OOMKilled"))
	s := r.requireDead(id)
	require.Equal(t, "OOMKilled", s.Observed.Reason)
	send("sent while the pod is dead", "waiting")
	r.requireDead(id)

	rep, code := r.reconcile()
	require.Equal(t, 0, code, "restarted and coming up needs nobody: %+v", rep)
	require.Equal(t, "Starting", rep.spore(t, id).Effective, "the table is the spore after the pass acted")
	require.True(t, rep.did(id, "restart"), "%+v", rep.Actions)
	newPod(old)
	require.Equal(t, claim, claimUID(), "the same claim")
	b = runPod()
	r.waitHealthy(id, 30*time.Second)
	r.settle(id, 30*time.Second)
	for seq := 1; seq <= numbered; seq++ {
		require.Contains(t, agentSeqs(r.events(id)), uint64(seq), "line %d numbered before the pod died", seq)
	}

	// 2. Someone deletes the pod. While it terminates it is waited on;
	// once it is gone the spore is Dead and reconcile replaces it.
	send("before the pod is deleted", "delivered")
	r.waitIdle(id, 10*time.Second)
	numbered = len(r.bridgeLog(id))
	old = pod().UID
	b.kill(t)
	require.NoError(t, kubelet.DeleteAsSomeoneElse(ctx, name))
	s, _ = r.status(id)
	require.NotEqual(t, "Healthy", s.Effective, "a pod being deleted: %+v", s)
	t.Logf("while the pod terminates: %s (%s)", s.Effective, s.Reason)
	rep, _ = r.reconcile()
	require.False(t, rep.did(id, "start") || rep.did(id, "restart") || rep.did(id, "stop"), "a terminating pod is waited on: %+v", rep.Actions)
	require.Equal(t, old, pod().UID)
	require.NoError(t, kubelet.Finish(ctx, name))
	r.requireDead(id)
	send("sent while the pod is gone", "waiting")
	r.reconcileUntil(id, "restart", 30*time.Second)
	newPod(old)
	require.Equal(t, claim, claimUID(), "the same claim")
	b = runPod()
	r.waitHealthy(id, 30*time.Second)
	r.settle(id, 30*time.Second)
	evs := r.events(id)
	for seq := 1; seq <= numbered; seq++ {
		require.Contains(t, agentSeqs(evs), uint64(seq), "line %d numbered before the pod was deleted", seq)
	}
	_, bridges := sessionsOf(t, evs)
	require.Len(t, bridges, 3, "three pods' bridges")
	for _, sess := range bridges {
		require.Equal(t, bridges[0], sess, "the same session in every pod")
	}
	require.Equal(t, 2, count(evs, state.KindLifecycle, "restart"))
	r.requireIntact(id, expect{echo: true, files: files, prompts: prompts})
	b.kill(t)
}

func agentSeqs(evs []state.Event) []uint64 {
	var out []uint64
	for _, e := range evs {
		if e.Kind == state.KindAgent {
			out = append(out, e.BridgeSeq)
		}
	}
	return out
}
