package kube_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/fakeapi"
	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/kube/images"
	"github.com/sporectl/sporectl/kube/images/imagestest"
	"github.com/sporectl/sporectl/kube/kubetest"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// The stages of a wake, in order. Each is the time from the wake (the
// call to Start) to the first moment it was seen; the source of each is
// said in docs/performance.md "Wake on the real node, by stage".
const (
	stScheduled = "scheduled" // watch: condition PodScheduled True
	stSandbox   = "sandbox"   // watch: condition PodReadyToStartContainers True
	stStarted   = "started"   // watch: the container's state Running
	stBridge    = "bridge"    // poll: GET /v1/status through the pod proxy answers
	stReady     = "ready"     // watch: condition Ready True
	stUp        = "up"        // poll: reconcile.Observe says BridgeUp (what `wake --wait` waits for)
	stAccepted  = "accepted"  // the first prompt's POST answered
	stLine      = "line"      // long poll: the first line numbered after the prompt
	stReply     = "reply"     // long poll: the first line of the model's reply (type assistant)
	stRunning   = "running"   // watch: a plain pod's phase Running
)

var wakeStages = []string{stScheduled, stSandbox, stStarted, stBridge, stReady, stUp, stAccepted, stLine, stReply}

// Probe layouts the benchmark wakes spores with, in the same run.
const (
	probesNow    = "now"    // kube.PodFor's as they are
	probesBefore = "before" // a readiness probe every 5 s and fsGroup applied Always, as before issue 39
)

// singleWakes is how many times, per iteration and layout, the lone
// spore is woken.
const singleWakes = 8

// homeFiles is how many files the lone spore's home holds, as a home with
// a checkout of a middling repository would: the kubelet walks them all
// on every mount when it applies the fsGroup Always.
const homeFiles = 20000

// BenchmarkRealNodeWakeStages wakes spores of the real spore image
// (Claude Code, the default agent, against the fake model on the node's
// address) on the real node and times each stage from the wake: pod
// scheduled, sandbox ready, container started, bridge answering (through
// the pod proxy), pod Ready, bridge up as the pass sees it, first prompt
// accepted, first line after it, first line of the model's reply. One
// spore alone (singleWakes times per iteration), then 20 at once; each
// with the pod's spec as it is (now) and as it was before issue 39 (a
// readiness probe every 5 s, fsGroup applied Always: before), in the same
// iteration. The lone spore's home holds homeFiles files. The baseline, in the same iteration: plain pods (the probe
// image, no probe) created alone and 20 at once, create to Running. It
// reports p50/p95/p99 of the main stages and the ratio of wake to bridge
// answering over plain create to Running, and logs every stage.
//
// "one" and "fleet" are sub-benchmarks: -bench RealNodeWakeStages/one
// runs the lone spore's alone.
//
//	go test ./kube -run '^$' -bench RealNodeWakeStages -benchtime 1x -v
func BenchmarkRealNodeWakeStages(b *testing.B) {
	n := kubetest.NewNode(b, kubetest.NodeOptions{MaxPods: 2*wakeFleet + 10})
	ns := n.Namespace(b)
	ctx := b.Context()
	require.NoError(b, n.ImportImage(ctx, imagestest.Spore(b)))

	api := fakeapi.New()
	api.Script(fakeapi.Rule{Match: "say hello", Steps: []fakeapi.Reply{fakeapi.Text("hello from the fake model")}})
	model := serveModel(b, n.IP, api)
	modelEnv := map[string]string{}
	for _, kv := range fakeapi.ClaudeEnv(model) {
		k, v, _ := strings.Cut(kv, "=")
		modelEnv[k] = v
	}
	_, err := n.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: kube.ModelSecret}, StringData: modelEnv}, metav1.CreateOptions{})
	require.NoError(b, err)

	n.LocalVolumes(b, wakeFleet+1, "1Gi")
	opts := kube.Options{Namespace: ns}
	rt, err := kube.New(n.Config, opts)
	require.NoError(b, err)
	w := &waker{b: b, n: n, ns: ns, rt: rt, opts: opts}

	// One spore with a whole core, as an operator gives a working spore;
	// twenty sharing the node's two cores (Guaranteed QoS: requests are
	// limits, and they must fit).
	lone := spore("one")
	lone.Spec = state.Spec{Image: images.SporeName, CPU: "1", Memory: "1Gi", Storage: "1Gi"}
	fleet := make([]state.Spore, wakeFleet)
	for i := range fleet {
		s := spore(fmt.Sprintf("f%02d", i))
		s.Spec = state.Spec{Image: images.SporeName, CPU: "90m", Memory: "400Mi", Storage: "1Gi"}
		fleet[i] = s
	}
	// Each spore's first start binds its claim and writes its Secret; the
	// benchmark is of waking an asleep spore on a home it already has.
	w.wake([]state.Spore{lone}, probesNow, false)
	fillHome(b, n, ns, lone.ID, homeFiles)

	// The layouts alternate, so a burst of load on the machine falls on
	// both.
	b.Run("one", func(b *testing.B) {
		w.b = b
		samples := stageSamples{}
		for i := 0; i < b.N; i++ {
			for r := range singleWakes {
				for _, layout := range []string{probesBefore, probesNow} {
					samples.add(layout, w.wake([]state.Spore{lone}, layout, true))
				}
				samples.add(probesPlain, w.plainPods(fmt.Sprintf("p%d-%d", i, r), 1))
			}
		}
		samples.report(b, "one")
	})
	b.Run("fleet", func(b *testing.B) {
		w.b = b
		// (Apart from the lone spore: its core and the fleet's do not
		// fit on the node together.)
		w.wake(fleet, probesNow, false)
		samples := stageSamples{}
		for i := 0; i < b.N; i++ {
			// Before only to Up: the reply's stages do not depend on the
			// pod's spec.
			samples.add(probesBefore, w.wake(fleet, probesBefore, false))
			samples.add(probesNow, w.wake(fleet, probesNow, true))
			samples.add(probesPlain, w.plainPods(fmt.Sprintf("f%d", i), wakeFleet))
		}
		samples.report(b, "fleet")
	})
}

// stageSamples are, per layout, every time each stage was seen.
type stageSamples map[string]map[string][]time.Duration

func (s stageSamples) add(layout string, got map[string]map[string]time.Duration) {
	if s[layout] == nil {
		s[layout] = map[string][]time.Duration{}
	}
	for _, stages := range got {
		for st, d := range stages {
			s[layout][st] = append(s[layout][st], d)
		}
	}
}

func (s stageSamples) p(layout, stage string, pct int) float64 {
	return percentile(s[layout][stage], pct).Seconds()
}

// report reports p50/p95/p99 of the main stages now, wake to up before,
// plain create to Running and the ratio of the two, and prints every
// stage of every layout.
func (s stageSamples) report(b *testing.B, who string) {
	for _, st := range []string{stBridge, stUp, stReply} {
		for _, pct := range []int{50, 95, 99} {
			b.ReportMetric(s.p(probesNow, st, pct), fmt.Sprintf("%s-p%d-s", st, pct))
		}
	}
	b.ReportMetric(s.p(probesBefore, stUp, 50), "before-up-p50-s")
	b.ReportMetric(s.p(probesBefore, stUp, 95), "before-up-p95-s")
	b.ReportMetric(s.p(probesPlain, stRunning, 50), "plain-p50-s")
	b.ReportMetric(s.p(probesNow, stBridge, 50)/s.p(probesPlain, stRunning, 50), "bridge/plain-p50")
	for _, layout := range []string{probesBefore, probesNow, probesPlain} {
		for _, st := range slices.Concat(wakeStages, []string{stRunning}) {
			if ds := s[layout][st]; len(ds) > 0 {
				// On stdout, not b.Logf: without -v the harness keeps only
				// a benchmark's first ten log lines, and `make bench` must
				// print the whole table.
				fmt.Printf("# wake-stages %-5s %-6s %-9s n=%-3d p50 %6.2fs  p95 %6.2fs  p99 %6.2fs\n", who, layout, st, len(ds), s.p(layout, st, 50), s.p(layout, st, 95), s.p(layout, st, 99))
			}
		}
	}
}

const probesPlain = "plain"

// waker wakes spores and times their stages.
type waker struct {
	b    *testing.B
	n    *kubetest.Node
	ns   string
	rt   *kube.Runtime
	opts kube.Options
}

// wake wakes spores with the probe layout, times every stage (through the
// prompt's reply when prompt) per spore, and puts them back to sleep.
func (w *waker) wake(spores []state.Spore, probes string, prompt bool) map[string]map[string]time.Duration {
	b, ctx := w.b, w.b.Context()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	rec := newStageRecorder()
	start := time.Now()
	watchDone := w.watchPods(ctx, rec, start)
	ids := make([]string, len(spores))
	for i, s := range spores {
		ids[i] = s.ID
	}
	upDone := make(chan struct{})
	go func() { defer close(upDone); w.untilUp(ctx, rec, ids, start) }()
	var wg sync.WaitGroup
	parallel(b, len(spores), func(i int) error {
		s := spores[i]
		launch := reconcile.Launch{Identity: "You are spore " + s.ID + ".", Creds: creds(s.ID)}
		if err := w.start(ctx, s, launch, probes); err != nil {
			return err
		}
		wg.Go(func() { w.bridgeStages(ctx, rec, s.ID, start, prompt) })
		return nil
	})
	wg.Wait()
	<-upDone
	// Up may now come before Ready (the pass asks a started pod's
	// bridge): the watch runs until it saw every pod Ready too.
	names := make([]string, len(ids))
	for i, id := range ids {
		names[i] = kube.ObjectName(id)
	}
	rec.waitFor(ctx, names, stReady)
	cancel()
	<-watchDone
	parallel(b, len(spores), func(i int) error { return w.rt.Stop(w.b.Context(), spores[i].ID) })
	for _, s := range spores {
		waitPodGone(b, w.n, w.ns, kube.ObjectName(s.ID))
	}
	got := rec.byName()
	want := []string{stScheduled, stSandbox, stStarted, stBridge, stReady, stUp}
	if prompt {
		want = wakeStages
	}
	out := map[string]map[string]time.Duration{}
	for _, s := range spores {
		stages := got[kube.ObjectName(s.ID)]
		for _, st := range want {
			_, ok := stages[st]
			require.True(b, ok, "spore %s (%s probes): stage %s never seen; seen %v", s.ID, probes, st, stages)
		}
		out[s.ID] = stages
	}
	return out
}

// start is rt.Start with the spec now; before, the pod is PodFor's with
// the probe and fsGroup policy as they were, created directly (the
// spores were started once before: their claims are bound, their
// Secrets made).
func (w *waker) start(ctx context.Context, s state.Spore, l reconcile.Launch, probes string) error {
	if probes == probesNow {
		return w.rt.Start(ctx, s, l)
	}
	pod, err := w.opts.PodFor(s, l.Identity)
	if err != nil {
		return err
	}
	pod.Spec.SecurityContext.FSGroupChangePolicy = nil
	c := &pod.Spec.Containers[0]
	c.ReadinessProbe.PeriodSeconds = 5
	c.ReadinessProbe.FailureThreshold = 3
	_, err = w.n.Client.CoreV1().Pods(w.ns).Create(ctx, pod, metav1.CreateOptions{})
	return err
}

// bridgeStages polls the spore's bridge through the pod proxy until it
// answers; then, when prompt, sends the first prompt and long-polls its
// lines until the model's reply and the turn's end.
func (w *waker) bridgeStages(ctx context.Context, rec *stageRecorder, id string, start time.Time, prompt bool) {
	name := kube.ObjectName(id)
	var c *bridge.Client
	var st bridge.Status
	for ctx.Err() == nil {
		if c == nil {
			if ep, err := w.rt.Bridge(ctx, id); err == nil {
				c, _ = bridge.NewClient(ep.BaseURL, ep.Token, ep.Client)
			}
		}
		if c != nil {
			var err error
			if st, err = c.WithTimeout(time.Second).Status(ctx); err == nil {
				rec.seen(name, stBridge, time.Since(start))
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	if !prompt || ctx.Err() != nil {
		return
	}
	if _, err := c.Prompt(ctx, bridge.PromptRequest{ID: fmt.Sprintf("hello-%d", start.UnixNano()), From: "operator", Text: "please say hello"}); err != nil {
		w.b.Errorf("spore %s: first prompt: %v", id, err)
		return
	}
	rec.seen(name, stAccepted, time.Since(start))
	after := st.LastSeq
	for ctx.Err() == nil {
		evs, err := c.Events(ctx, after, bridge.MaxLimit, 20*time.Second)
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		now := time.Since(start)
		for _, e := range evs.Events {
			rec.seen(name, stLine, now)
			if isAssistant(e.Line) {
				rec.seen(name, stReply, now)
			}
			after = e.Seq
			if isResult(e.Line, "hello from the fake model") {
				waitIdle(ctx, c)
				return
			}
		}
	}
}

func isAssistant(line []byte) bool {
	return strings.Contains(string(line), `"type":"assistant"`)
}

// waitIdle waits until the bridge has taken the turn off its queue, so
// the sleep that follows does not leave the prompt queued for the next
// wake.
func waitIdle(ctx context.Context, c *bridge.Client) {
	for ctx.Err() == nil {
		if st, err := c.Status(ctx); err == nil && st.State == bridge.StateIdle && st.Queue == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// untilUp polls one observation of ids, as a pass makes it, until every
// bridge is up (BridgeUp: the pod Running, Ready or its container started
// in the last minute, its status answered).
func (w *waker) untilUp(ctx context.Context, rec *stageRecorder, ids []string, start time.Time) {
	up := map[string]bool{}
	for len(up) < len(ids) && ctx.Err() == nil {
		obs, _, err := reconcile.Observe(ctx, w.rt, ids)
		if err == nil {
			now := time.Since(start)
			for _, id := range ids {
				if !up[id] && obs[id].Bridge == reconcile.BridgeUp {
					up[id] = true
					rec.seen(kube.ObjectName(id), stUp, now)
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// watchPods records, per pod of the namespace, when each pod stage was
// first seen on a watch opened before anything is created. The pod's own
// timestamps (lastTransitionTime, startedAt) are whole seconds, too
// coarse for stages under a second; the watch's arrival is the API
// server's record plus the watch's delivery.
func (w *waker) watchPods(ctx context.Context, rec *stageRecorder, start time.Time) <-chan struct{} {
	wi, err := w.n.Client.CoreV1().Pods(w.ns).Watch(ctx, metav1.ListOptions{})
	require.NoError(w.b, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer wi.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-wi.ResultChan():
				if !ok {
					return
				}
				p, isPod := ev.Object.(*corev1.Pod)
				if !isPod {
					continue
				}
				now := time.Since(start)
				for _, c := range p.Status.Conditions {
					if c.Status != corev1.ConditionTrue {
						continue
					}
					switch c.Type {
					case corev1.PodScheduled:
						rec.seen(p.Name, stScheduled, now)
					case corev1.PodReadyToStartContainers:
						rec.seen(p.Name, stSandbox, now)
					case corev1.PodReady:
						rec.seen(p.Name, stReady, now)
					}
				}
				for _, cs := range p.Status.ContainerStatuses {
					if cs.State.Running != nil {
						rec.seen(p.Name, stStarted, now)
					}
				}
				if p.Status.Phase == corev1.PodRunning {
					rec.seen(p.Name, stRunning, now)
				}
			}
		}
	}()
	return done
}

// plainPods creates count plain pods at once (the probe image, no probe)
// and returns, per pod, create to Running as the watch saw it, then
// deletes them.
func (w *waker) plainPods(prefix string, count int) map[string]map[string]time.Duration {
	b := w.b
	ctx, cancel := context.WithTimeout(b.Context(), 3*time.Minute)
	defer cancel()
	rec := newStageRecorder()
	start := time.Now()
	watchDone := w.watchPods(ctx, rec, start)
	names := make([]string, count)
	parallel(b, count, func(i int) error {
		pod := probePod(fmt.Sprintf("plain-%s-%02d", prefix, i), "serve")
		names[i] = pod.Name
		_, err := w.n.Client.CoreV1().Pods(w.ns).Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
	out := map[string]map[string]time.Duration{}
	for len(out) < count {
		if ctx.Err() != nil {
			b.Fatalf("%d of %d plain pods Running after 3 min", len(out), count)
		}
		got := rec.byName()
		for _, name := range names {
			if _, ok := got[name][stRunning]; ok {
				out[name] = got[name]
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	<-watchDone
	for _, name := range names {
		deletePodAndWait(b, w.n, w.ns, name)
	}
	return out
}

// stageRecorder keeps, per pod name, the first time each stage was seen.
type stageRecorder struct {
	mu sync.Mutex
	at map[string]map[string]time.Duration
}

func newStageRecorder() *stageRecorder {
	return &stageRecorder{at: map[string]map[string]time.Duration{}}
}

func (r *stageRecorder) seen(name, stage string, d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.at[name] == nil {
		r.at[name] = map[string]time.Duration{}
	}
	if _, ok := r.at[name][stage]; !ok {
		r.at[name][stage] = d
	}
}

// waitFor waits until stage was seen of every one of names, or ctx ends.
func (r *stageRecorder) waitFor(ctx context.Context, names []string, stage string) {
	for ctx.Err() == nil {
		r.mu.Lock()
		all := true
		for _, name := range names {
			if _, ok := r.at[name][stage]; !ok {
				all = false
			}
		}
		r.mu.Unlock()
		if all {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (r *stageRecorder) byName() map[string]map[string]time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]map[string]time.Duration, len(r.at))
	for name, stages := range r.at {
		out[name] = map[string]time.Duration{}
		for st, d := range stages {
			out[name][st] = d
		}
	}
	return out
}

// serveModel serves h on addr's interface at a free port, for the pods,
// and returns its URL (serveOn for a benchmark).
func serveModel(tb testing.TB, addr string, h http.Handler) string {
	tb.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
	require.NoError(tb, err)
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	tb.Cleanup(srv.Close)
	return srv.URL
}

// fillHome writes count small files, in directories of 100, into the
// home of spore id (its claim's local volume on the node), owned by the
// spore's user and group as the spore's own files are.
func fillHome(b *testing.B, n *kubetest.Node, ns, id string, count int) {
	b.Helper()
	claim, err := n.Client.CoreV1().PersistentVolumeClaims(ns).Get(b.Context(), kube.ObjectName(id), metav1.GetOptions{})
	require.NoError(b, err)
	root := filepath.Join(n.VolumePath(b, claim.Spec.VolumeName), "checkout")
	for i := range count {
		dir := filepath.Join(root, fmt.Sprintf("d%03d", i/100))
		if i%100 == 0 {
			require.NoError(b, os.MkdirAll(dir, 0o755))
			require.NoError(b, os.Chown(dir, kube.SporeUID, kube.SporeUID))
		}
		f := filepath.Join(dir, fmt.Sprintf("f%03d.go", i%100))
		require.NoError(b, os.WriteFile(f, []byte("package x\n"), 0o644))
		require.NoError(b, os.Chown(f, kube.SporeUID, kube.SporeUID))
	}
	require.NoError(b, os.Chown(root, kube.SporeUID, kube.SporeUID))
}
