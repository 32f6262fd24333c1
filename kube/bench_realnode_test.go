package kube_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/kube/images"
	"github.com/sporectl/sporectl/kube/images/imagestest"
	"github.com/sporectl/sporectl/kube/kubetest"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

const wakeFleet = 20

// BenchmarkRealNodeWake20 wakes 20 asleep spores of the real spore image
// (Claude Code, the default agent) at once on the real node and times,
// per spore, Start to Healthy as reconcile judges it (pod Running and
// Ready, the bridge answering through the pod proxy). The baseline, in
// the same iteration on the same node: 20 plain pods created at once,
// Create to Running and Ready, with the spore's readiness probe period.
// BenchmarkRealNodeWakeStages times the same wake by stage.
// It reports p50 and p99 of both and their ratio; once, the spore
// image's size and import time; and, with the 20 Healthy, `status`'s
// observation (pods and every bridge) against `kubectl get pods -o json`.
//
//	go test ./kube -run '^$' -bench RealNodeWake20 -benchtime 1x -count 3
func BenchmarkRealNodeWake20(b *testing.B) {
	n := kubetest.NewNode(b, kubetest.NodeOptions{MaxPods: 3*wakeFleet + 10})
	ns := n.Namespace(b)
	ctx := b.Context()

	archive := imagestest.Spore(b)
	st, err := os.Stat(archive)
	require.NoError(b, err)
	began := time.Now()
	require.NoError(b, n.ImportImage(ctx, archive))
	imported := time.Since(began)

	n.LocalVolumes(b, wakeFleet, "1Gi")
	rt, err := kube.New(n.Config, kube.Options{Namespace: ns})
	require.NoError(b, err)
	spores := make([]state.Spore, wakeFleet)
	ids := make([]string, wakeFleet)
	for i := range spores {
		s := spore(fmt.Sprintf("w%02d", i))
		s.Spec = state.Spec{Image: images.SporeName, CPU: "50m", Memory: "256Mi", Storage: "1Gi"}
		spores[i], ids[i] = s, s.ID
	}
	wakeAll := func() map[string]time.Duration {
		start := time.Now()
		parallel(b, wakeFleet, func(i int) error {
			return rt.Start(ctx, spores[i], reconcile.Launch{Identity: "You are spore " + ids[i] + ".", Creds: creds(ids[i])})
		})
		return untilHealthy(b, rt, ids, start)
	}
	sleepAll := func() {
		parallel(b, wakeFleet, func(i int) error { return rt.Stop(ctx, ids[i]) })
		for _, id := range ids {
			waitPodGone(b, n, ns, kube.ObjectName(id))
		}
	}
	// Each spore's first start binds its claim; the benchmark is of
	// waking an asleep spore, on a home it already has.
	wakeAll()
	sleepAll()

	var sporeTimes, podTimes []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, d := range wakeAll() {
			sporeTimes = append(sporeTimes, d)
		}
		b.StopTimer()
		sleepAll()
		podTimes = append(podTimes, plainPodsReady(b, n, ns, i)...)
		b.StartTimer()
	}
	b.StopTimer()

	// With every spore Healthy: status's observation against kubectl.
	wakeAll()
	ours, theirs := statusVsKubectl(b, n, rt, ns, ids)

	sp50, sp99 := percentile(sporeTimes, 50), percentile(sporeTimes, 99)
	pp50, pp99 := percentile(podTimes, 50), percentile(podTimes, 99)
	b.ReportMetric(sp50.Seconds(), "spore-p50-s")
	b.ReportMetric(sp99.Seconds(), "spore-p99-s")
	b.ReportMetric(pp50.Seconds(), "pod-p50-s")
	b.ReportMetric(pp99.Seconds(), "pod-p99-s")
	b.ReportMetric(sp50.Seconds()/pp50.Seconds(), "p50-ratio")
	b.ReportMetric(float64(st.Size())/1e6, "image-MB")
	b.ReportMetric(imported.Seconds(), "import-s")
	b.ReportMetric(float64(ours.Microseconds())/1e3, "status-ms")
	b.ReportMetric(float64(theirs.Microseconds())/1e3, "kubectl-ms")
	b.ReportMetric(ours.Seconds()/theirs.Seconds(), "status-ratio")
}

// untilHealthy polls one observation of all ids (as `status` makes it)
// and returns, per spore, the time from start to its first Healthy.
func untilHealthy(b *testing.B, rt *kube.Runtime, ids []string, start time.Time) map[string]time.Duration {
	b.Helper()
	got := map[string]time.Duration{}
	deadline := start.Add(3 * time.Minute)
	var last map[string]reconcile.Observed
	for len(got) < len(ids) {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d spores Healthy after 3 min; observed %+v", len(got), len(ids), last)
		}
		obs, _, err := reconcile.Observe(b.Context(), rt, ids)
		if err == nil {
			last = obs
			now := time.Since(start)
			for _, id := range ids {
				if _, done := got[id]; done {
					continue
				}
				if reconcile.Health(state.Running, obs[id], false).Effective == policy.Healthy {
					got[id] = now
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return got
}

// plainPodsReady creates wakeFleet probe pods at once and returns each
// one's Create to Running and Ready, then deletes them.
func plainPodsReady(b *testing.B, n *kubetest.Node, ns string, round int) []time.Duration {
	b.Helper()
	ctx := b.Context()
	names := make([]string, wakeFleet)
	start := time.Now()
	parallel(b, wakeFleet, func(i int) error {
		pod := probePod(fmt.Sprintf("plain-%d-%02d", round, i), "serve")
		pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}},
			PeriodSeconds: 1, // the spore pod's (kube/probes.go)
		}
		names[i] = pod.Name
		_, err := n.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
	// One LIST per tick, as untilHealthy observes the spores.
	ready := map[string]time.Duration{}
	deadline := start.Add(3 * time.Minute)
	for len(ready) < len(names) {
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d plain pods Running and Ready after 3 min", len(ready), len(names))
		}
		pods, err := n.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		require.NoError(b, err)
		now := time.Since(start)
		for i := range pods.Items {
			p := &pods.Items[i]
			if _, done := ready[p.Name]; !done && slices.Contains(names, p.Name) && p.Status.Phase == corev1.PodRunning && podReady(p) {
				ready[p.Name] = now
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	out := make([]time.Duration, 0, len(ready))
	for _, d := range ready {
		out = append(out, d)
	}
	for _, name := range names {
		deletePodAndWait(b, n, ns, name)
	}
	return out
}

// statusVsKubectl times, five times each, the observation `status`
// makes of ids (one LIST of pods and claims, every bridge asked through
// the pod proxy) and `kubectl get pods -o json` of the namespace; it
// returns the medians.
func statusVsKubectl(b *testing.B, n *kubetest.Node, rt *kube.Runtime, ns string, ids []string) (ours, theirs time.Duration) {
	b.Helper()
	kubectl := kubetest.RequireBinary(b, "kubectl")
	var o, k []time.Duration
	for range 5 {
		t0 := time.Now()
		obs, _, err := reconcile.Observe(b.Context(), rt, ids)
		require.NoError(b, err)
		o = append(o, time.Since(t0))
		for _, id := range ids {
			require.Equal(b, reconcile.BridgeUp, obs[id].Bridge, "spore %s's bridge answers", id)
		}
		t1 := time.Now()
		cmd := exec.CommandContext(b.Context(), kubectl, "--kubeconfig", n.Kubeconfig, "get", "pods", "-n", ns, "-o", "json")
		cmd.Stdout = io.Discard
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		require.NoError(b, cmd.Run(), "kubectl: %s", stderr.String())
		k = append(k, time.Since(t1))
	}
	return percentile(o, 50), percentile(k, 50)
}

// percentile is the nearest-rank percentile of ds.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (p*len(s) + 99) / 100
	return s[max(i-1, 0)]
}
