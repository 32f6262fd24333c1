package kube_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sporectl/sporectl/bridge/sporeenv"
	"github.com/sporectl/sporectl/cmd/cli"
	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/kube/images"
	"github.com/sporectl/sporectl/kube/kubetest"
	"github.com/sporectl/sporectl/mycelia"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
)

// `mycologist hosts` and `host-logs` on a real node: spore pods of the
// sporectl image (echo agent) run by the real kubelet, metrics-server
// (built from the module proxy) scraping that kubelet and served through
// the API server as the aggregated metrics.k8s.io API. Hosts runs as the
// Role's service account (kube/deploy/rbac.yaml), so metrics-server's own
// authorization check of the caller is real too.
func TestRealNodeHostsMetricsAndLogs(t *testing.T) {
	if _, err := kubetest.MetricsServerBinary(); err != nil && os.Getenv("CI") == "" {
		t.Skip(err) // before the node: no reason to start one
	}
	n := kubetest.NewNode(t, kubetest.NodeOptions{})
	ns := n.Namespace(t)
	ctx := t.Context()
	require.NoError(t, n.ImportImage(ctx, sporectlImage(t)))
	n.LocalVolumes(t, 2, "1Gi")
	rt, err := kube.New(n.Config, kube.Options{Namespace: ns, Agent: "echo"})
	require.NoError(t, err)
	hostsRT, err := kube.New(serviceAccountConfig(t, ctx, n.Config, n.Client, ns), kube.Options{Namespace: ns})
	require.NoError(t, err)

	start := func(id string) {
		t.Helper()
		s := spore(id)
		s.Spec = state.Spec{Image: images.SporectlName, CPU: "500m", Memory: "256Mi", Storage: "1Gi"}
		require.NoError(t, rt.Start(ctx, s, reconcile.Launch{Identity: "You are spore " + id + ".", Creds: creds(id)}))
	}
	hostOf := func(t *testing.T, l reconcile.HostList, name string) reconcile.Host {
		t.Helper()
		for _, h := range l.Hosts {
			if h.Name == name {
				return h
			}
		}
		t.Fatalf("no host %s in %+v", name, l)
		return reconcile.Host{}
	}
	start("m1")
	waitHealthy(t, rt, "m1")

	require.True(t, t.Run("no metrics API yet: the pod listed, no figures, and the answer says the API is absent", func(t *testing.T) {
		l, err := hostsRT.Hosts(ctx)
		require.NoError(t, err)
		assert.Equal(t, kube.MetricsAbsent, l.Metrics)
		h := hostOf(t, l, "spore-m1")
		assert.Equal(t, "Running", h.State)
		assert.Nil(t, h.CPUCores)
		assert.Nil(t, h.MemoryBytes)
	}), "each step needs the one before")

	ms := n.StartMetricsServer(t)

	var m1 reconcile.Host
	require.True(t, t.Run("the real metrics API: CPU and memory of the pod, parsed in cores and bytes", func(t *testing.T) {
		l := waitHostFigures(t, hostsRT, "spore-m1", ms)
		assert.Equal(t, kube.MetricsFromAPI, l.Metrics, "every pod has figures")
		m1 = hostOf(t, l, "spore-m1")
		require.NotNil(t, m1.MemoryBytes)
		require.NotNil(t, m1.CPUCores)
		mem, cpu := *m1.MemoryBytes, *m1.CPUCores
		t.Logf("spore-m1: %.6f cores, %d bytes (%.1f MiB)", cpu, mem, float64(mem)/(1<<20))
		assert.Greater(t, mem, int64(1<<20), "a Go bridge's working set is over 1 MiB")
		assert.Less(t, mem, int64(256<<20), "under the pod's memory limit")
		assert.GreaterOrEqual(t, cpu, 0.0)
		assert.Less(t, cpu, 0.5, "an idle echo bridge under its CPU limit")

		// The working set is what the container's memory cgroup holds; it
		// never exceeds the cgroup's peak (read on the host, not through
		// any API).
		p, err := n.Client.CoreV1().Pods(ns).Get(ctx, "spore-m1", metav1.GetOptions{})
		require.NoError(t, err)
		peak := cgroupMemoryPeak(t, containerPID(t, p.Status.ContainerStatuses[0].ContainerID))
		assert.LessOrEqual(t, mem, peak, "working set within the cgroup's peak usage %d", peak)

		// The same figures as the metrics API's own text, in its units
		// (memory in Ki, CPU in n): read before and after one Hosts call
		// until both fall in one scrape window.
		for i := 0; ; i++ {
			before := rawPodMetrics(t, n, ns)["spore-m1"]
			l, err := hostsRT.Hosts(ctx)
			require.NoError(t, err)
			after := rawPodMetrics(t, n, ns)["spore-m1"]
			if before != after && i < 5 {
				continue
			}
			require.Equal(t, before, after, "five Hosts calls, each across a new scrape")
			t.Logf("metrics API text: cpu %q, memory %q", before.CPU, before.Memory)
			h := hostOf(t, l, "spore-m1")
			memQ, cpuQ := resource.MustParse(before.Memory), resource.MustParse(before.CPU)
			assert.Equal(t, memQ.Value(), *h.MemoryBytes, "memory %s in bytes", before.Memory)
			assert.InDelta(t, cpuQ.AsApproximateFloat64(), *h.CPUCores, 1e-9, "cpu %s in cores", before.CPU)
			break
		}
	}), "each step needs the one before")

	require.True(t, t.Run("a pod not scraped yet: listed with no figures, and the answer says they are not there yet", func(t *testing.T) {
		start("m2")
		// At once, before metrics-server's second scrape of its container
		// (CPU is a rate of two samples, 10 s apart at the least).
		waitPod(t, n, ns, "spore-m2", "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
		l, err := hostsRT.Hosts(ctx)
		require.NoError(t, err)
		h := hostOf(t, l, "spore-m2")
		assert.Equal(t, "Running", h.State)
		assert.Nil(t, h.MemoryBytes)
		assert.Nil(t, h.CPUCores)
		assert.NotNil(t, hostOf(t, l, "spore-m1").MemoryBytes, "the other pod's figures are still there")
		assert.Equal(t, kube.MetricsFromAPI+"; "+fmt.Sprintf(kube.MetricsNotYet, "spore-m2"), l.Metrics)

		l = waitHostFigures(t, hostsRT, "spore-m2", ms)
		assert.Equal(t, kube.MetricsFromAPI, l.Metrics, "every pod has figures now")
	}), "each step needs the one before")

	api := hostsAPI(t, rt)
	require.True(t, t.Run("mycologist hosts through serve shows the figures", func(t *testing.T) {
		table := api.run(t, "mycologist", "hosts")
		require.Regexp(t, `(?m)^NAME\s+SPORE\s+STATE\s+CPU\s+MEMORY\s+RESTARTS\s+AGE$`, table)
		require.Regexp(t, `(?m)^spore-m1\s+m1\s+Running\s+[1-9]\d*m\s+\d+\.\dMi\s+0\s+\S+$`, table)
		require.Regexp(t, `(?m)^spore-m2\s+m2\s+Running\s+[1-9]\d*m\s+\d+\.\dMi\s+0\s+\S+$`, table)
		require.Contains(t, table, "# kube: "+kube.MetricsFromAPI+"\n")

		var l reconcile.HostList
		require.NoError(t, json.Unmarshal([]byte(api.run(t, "mycologist", "hosts", "-o", "json")), &l))
		require.Equal(t, "kube", l.Runtime)
		h := hostOf(t, l, "spore-m1")
		require.NotNil(t, h.MemoryBytes)
		assert.Greater(t, *h.MemoryBytes, int64(1<<20))
		require.NotNil(t, h.CPUCores)
	}), "each step needs the one before")

	require.True(t, t.Run("host-logs reads the bridge container's real log", func(t *testing.T) {
		text, err := hostsRT.HostLogs(ctx, "spore-m1", 50)
		require.NoError(t, err)
		assert.Contains(t, text, `msg="bridge serving"`, "the bridge's first line, as the kubelet kept it")
		assert.Contains(t, text, "agent=echo")
		assert.NotContains(t, text, creds("m1").BridgeToken)

		// `sporectl logs` reads the same log through the same pods/log.
		var logs bytes.Buffer
		require.NoError(t, rt.Logs(ctx, "m1", reconcile.LogOptions{Tail: 5}, &logs))
		assert.Contains(t, logs.String(), `msg="bridge serving"`)

		out := api.run(t, "mycologist", "host-logs", "m1", "--tail", "5")
		assert.Contains(t, out, `msg="bridge serving"`)
		var hl mycelia.HostLogs
		require.NoError(t, json.Unmarshal([]byte(api.run(t, "mycologist", "host-logs", "spore-m2", "-o", "json")), &hl))
		assert.Equal(t, "spore-m2", hl.Name)
		assert.Equal(t, "m2", hl.Spore)
		assert.Contains(t, hl.Text, `msg="bridge serving"`)
	}), "each step needs the one before")

	t.Run("metrics-server stopped: absent again; the node torn down leaves nothing", func(t *testing.T) {
		require.NoError(t, ms.Stop())
		// The aggregator drops the APIService's route within a moment
		// (until then: not ready).
		var l reconcile.HostList
		for deadline := time.Now().Add(10 * time.Second); ; {
			var err error
			l, err = hostsRT.Hosts(ctx)
			require.NoError(t, err)
			if l.Metrics != kube.MetricsNotReady || time.Now().After(deadline) {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		assert.Equal(t, kube.MetricsAbsent, l.Metrics)
		assert.Len(t, l.Hosts, 2)
		require.NoError(t, n.Stop())
		assert.Empty(t, n.Leftovers())
	})
}

// hostsAPI is serve's API over the node's runtime with an [arch]
// mycologist, as `sporectl serve` builds it, and the CLI to call it.
type hostsCLI struct {
	url, token string
}

func hostsAPI(t *testing.T, rt *kube.Runtime) *hostsCLI {
	t.Helper()
	ctx := t.Context()
	st, _, err := dirstore.Init(ctx, filepath.Join(t.TempDir(), "store"), state.Settings{Runtime: "kube"}, dirstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	boss := spore("boss")
	boss.Rank = state.RankArch // awake (Desired Running): a sleeping spore may not call serve
	tok, hash, err := state.NewToken()
	require.NoError(t, err)
	require.NoError(t, st.Update(ctx, func(tx state.Tx) error {
		if err := tx.CreateSpore(ctx, boss); err != nil {
			return err
		}
		return tx.SetTokenHash(ctx, boss.ID, hash)
	}))
	srv := &mycelia.Server{Store: st, Pass: reconciletest.NewPass(t, st, reconciletest.WithRuntime(rt), reconciletest.RealClock())}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return &hostsCLI{url: ts.URL, token: tok}
}

// run runs a command line as the [arch] mycologist inside its pod would
// (its environment names serve, itself and its token).
func (c *hostsCLI) run(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	f := cli.NewFactory(cli.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb})
	vars := map[string]string{sporeenv.APIURL: c.url, sporeenv.SporeID: "boss", sporeenv.APIToken: c.token}
	f.Getenv = func(k string) string { return vars[k] }
	code := cli.RunWith(t.Context(), f, args)
	require.Zero(t, code, "%v: %s%s", args, out.String(), errb.String())
	return out.String()
}

// waitHostFigures polls Hosts until name has CPU and memory figures.
func waitHostFigures(t *testing.T, rt *kube.Runtime, name string, ms *kubetest.MetricsServer) reconcile.HostList {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var last reconcile.HostList
	for time.Now().Before(deadline) {
		l, err := rt.Hosts(t.Context())
		require.NoError(t, err)
		last = l
		for _, h := range l.Hosts {
			if h.Name == name && h.MemoryBytes != nil && h.CPUCores != nil {
				return l
			}
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("no figures for %s in 90 s: %+v\nmetrics-server:\n%s", name, last, ms.LogTail())
	return last
}

type rawUsage struct{ CPU, Memory string }

// rawPodMetrics is the metrics API's answer for ns as text, by pod (one
// container each).
func rawPodMetrics(t *testing.T, n *kubetest.Node, ns string) map[string]rawUsage {
	t.Helper()
	b, err := n.Client.CoreV1().RESTClient().Get().AbsPath("/apis/metrics.k8s.io/v1beta1/namespaces", ns, "pods").DoRaw(t.Context())
	require.NoError(t, err)
	var list struct {
		Items []struct {
			Metadata   struct{ Name string }
			Containers []struct {
				Name  string
				Usage map[string]string
			}
		}
	}
	require.NoError(t, json.Unmarshal(b, &list), "%s", b)
	out := map[string]rawUsage{}
	for _, it := range list.Items {
		require.Len(t, it.Containers, 1, "%s", b)
		out[it.Metadata.Name] = rawUsage{CPU: it.Containers[0].Usage["cpu"], Memory: it.Containers[0].Usage["memory"]}
	}
	return out
}

// cgroupMemoryPeak is the peak memory use of pid's memory cgroup, from
// the host's cgroup filesystem (v1: memory.max_usage_in_bytes; v2:
// memory.peak).
func cgroupMemoryPeak(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	require.NoError(t, err)
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		var file string
		switch {
		case f[0] == "0" && f[1] == "":
			file = filepath.Join("/sys/fs/cgroup", f[2], "memory.peak")
		case strings.Contains(","+f[1]+",", ",memory,"):
			file = filepath.Join("/sys/fs/cgroup/memory", f[2], "memory.max_usage_in_bytes")
		default:
			continue
		}
		v, err := os.ReadFile(file)
		require.NoError(t, err)
		n, err := strconv.ParseInt(strings.TrimSpace(string(v)), 10, 64)
		require.NoError(t, err)
		return n
	}
	t.Fatalf("no memory cgroup for pid %d:\n%s", pid, b)
	return 0
}
