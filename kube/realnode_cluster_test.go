package kube_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sporectl/sporectl/kube/images"
	"github.com/sporectl/sporectl/kube/kubetest"
)

// The control plane in the cluster, as docs/runtimes.md ("Running on a
// real cluster") tells a k3s or kind user to set it up: the sporectl image
// imported into the node's containerd, the store's Secret, `kubectl apply
// -k kube/deploy`, `sporectl init` with the kube runtime against a real
// PostgreSQL the pods reach, serve as its Deployment behind its Service
// (kube-proxy's rules), a spore asking its mycologist from inside its pod,
// and the reconcile CronJob, run by the real CronJob controller, healing
// a spore whose pod was deleted with no operator command.
func TestRealNodeCluster(t *testing.T) {
	n := kubetest.NewNode(t, kubetest.NodeOptions{})
	ctx := t.Context()
	require.NoError(t, n.ImportImage(ctx, sporectlImage(t)))
	p := newClusterPlane(t, n)
	cli, kubectl, storeURL, run := p.cli, p.kubectl, p.storeURL, p.run
	n.LocalVolumes(t, 3, "1Gi")
	const ns = "sporectl"
	var clusterIP string

	require.True(t, t.Run("kube/deploy applied with the store's Secret: serve Ready behind its Service", func(t *testing.T) {
		// The order docs/runtimes.md gives: the namespace and the Secret,
		// the store, then the manifests (serve reads the store at start).
		run(t, kubectl, "create", "namespace", ns)
		run(t, kubectl, "-n", ns, "create", "secret", "generic", "sporectl-store", "--from-literal=url="+storeURL)
		run(t, cli, "init", "--runtime", "kube", "--agent", "echo", "--image", images.SporectlName,
			"--cpu", "250m", "--memory", "192Mi", "--storage", "1Gi", "--backoff-initial", "1s", "--no-operator")
		run(t, kubectl, "apply", "-k", "deploy")
		began := time.Now()
		run(t, kubectl, "-n", ns, "rollout", "status", "deployment/sporectl-serve", "--timeout=120s")
		t.Logf("serve's Deployment available %s after apply", time.Since(began).Round(100*time.Millisecond))

		// As docs/runtimes.md has a user read it.
		clusterIP = run(t, kubectl, "-n", ns, "get", "svc", "sporectl-api", "-o", "jsonpath={.spec.clusterIP}")
		_, cidr, err := net.ParseCIDR(kubetest.ServiceCIDR)
		require.NoError(t, err)
		require.True(t, cidr.Contains(net.ParseIP(clusterIP)), "ClusterIP %s in %s", clusterIP, kubetest.ServiceCIDR)
		// Only kube-proxy's DNAT rules make the ClusterIP answer (a Service
		// whose endpoints are not published yet is refused, so wait). No
		// HTTP proxy: a machine's proxy could answer for any address.
		direct := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}
		var last string
		if !within(30*time.Second, func() bool {
			resp, err := direct.Get("http://" + clusterIP + "/healthz")
			if err != nil {
				last = err.Error()
				return false
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
			last = resp.Status + " " + string(body)
			return resp.StatusCode == http.StatusOK && strings.TrimSpace(string(body)) == `{"ok":true}`
		}) {
			t.Fatalf("serve not reached at its Service's ClusterIP %s: %s\nkube-proxy:\n%s", clusterIP, last, n.NodeLogTail("kube-proxy"))
		}

		// No cluster DNS on this node: spores are told the Service's
		// ClusterIP (docs/runtimes.md says when to do this).
		run(t, cli, "init", "--api-url", "http://"+clusterIP)
	}), "each step needs the one before")

	require.True(t, t.Run("a spore asks from inside its pod; the summons wakes its mycologist and reaches it", func(t *testing.T) {
		run(t, cli, "create", "myco", "--rank", "colony", "--colony", "lab")
		run(t, cli, "create", "asker", "--colony", "lab", "--wake")
		run(t, cli, "wake", "asker", "--wait", "90s")
		pod, err := n.Client.CoreV1().Pods(ns).Get(ctx, "spore-asker", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Contains(t, pod.Spec.Containers[0].Env, corev1.EnvVar{Name: "SPORECTL_API_URL", Value: "http://" + clusterIP})

		// The spore's own environment (its id, serve's URL, its token from
		// its Secret): what an agent's Bash tool runs.
		out := run(t, kubectl, "-n", ns, "exec", "spore-asker", "-c", "bridge", "--",
			"sporectl", "mycologist", "ask", "my build is red: please look", "--retry-for", "60s")
		assert.Regexp(t, `^message/m-[0-9a-f]{24} .*spore/myco`, out)

		echo := "echo: [from spore asker]\n        my build is red: please look"
		var chat string
		if !within(2*time.Minute, func() bool {
			chat = run(t, cli, "chat", "myco")
			return strings.Contains(chat, echo)
		}) {
			t.Fatalf("the summons never reached the mycologist:\n%s\nserve's log:\n%s", chat, podLogs(t, n, ns, "app.kubernetes.io/component=serve"))
		}
		assert.Equal(t, 1, strings.Count(chat, echo), "answered once:\n%s", chat)
		_, err = n.Client.CoreV1().Pods(ns).Get(ctx, "spore-myco", metav1.GetOptions{})
		require.NoError(t, err, "serve woke the sleeping mycologist in the cluster")
	}), "each step needs the one before")

	t.Run("a spore's pod deleted: the reconcile CronJob's pass heals it, no operator command", func(t *testing.T) {
		old, err := n.Client.CoreV1().Pods(ns).Get(ctx, "spore-asker", metav1.GetOptions{})
		require.NoError(t, err)
		deletePodAndWait(t, n, ns, "spore-asker")
		deleted := time.Now()

		// From here only reads: the heal is the CronJob's.
		// The schedule is every minute: the next pass is at most a minute
		// away, plus the pod's start.
		var fresh *corev1.Pod
		if !within(3*time.Minute, func() bool {
			p, err := n.Client.CoreV1().Pods(ns).Get(ctx, "spore-asker", metav1.GetOptions{})
			if err == nil && p.UID != old.UID && podReady(p) {
				fresh = p
			}
			return fresh != nil
		}) {
			t.Fatalf("no new pod 3 minutes after the deletion; the reconcile Jobs' logs:\n%s", podLogs(t, n, ns, "app.kubernetes.io/component=reconcile"))
		}
		t.Logf("healed %s after the pod was deleted", time.Since(deleted).Round(time.Second))
		assert.Equal(t, old.Spec.Volumes, fresh.Spec.Volumes, "the same home")

		// The pass that made it says so on its stderr (`asker restart:
		// after …`) in the log of a pod of a Job the CronJob made.
		var healer string
		if !within(time.Minute, func() bool {
			for _, said := range []string{"asker restart: ", "asker start: "} {
				if healer = cronJobPodSaying(t, n, ns, "sporectl-reconcile", said); healer != "" {
					return true
				}
			}
			return false
		}) {
			t.Fatalf("no pass of the CronJob says it restarted asker; the reconcile Jobs' logs:\n%s", podLogs(t, n, ns, "app.kubernetes.io/component=reconcile"))
		}
		t.Logf("healed by %s", healer)

		var doc struct {
			Spores []struct {
				Effective string `json:"effective"`
			} `json:"spores"`
		}
		out := run(t, cli, "status", "-o", "json", "asker")
		require.NoError(t, json.Unmarshal([]byte(out), &doc), "%s", out)
		require.Len(t, doc.Spores, 1)
		assert.Equal(t, "Healthy", doc.Spores[0].Effective)
	})
}

// within polls ok every second until it holds or limit passes.
func within(limit time.Duration, ok func() bool) bool {
	deadline := time.Now().Add(limit)
	for {
		if ok() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Second)
	}
}

// cronJobPodSaying names the pod of a Job of the CronJob whose log holds
// text, or "".
func cronJobPodSaying(t *testing.T, n *kubetest.Node, ns, cronJob, text string) string {
	jobs, err := n.Client.BatchV1().Jobs(ns).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		return ""
	}
	for _, j := range jobs.Items {
		owner := metav1.GetControllerOf(&j)
		if owner == nil || owner.Kind != "CronJob" || owner.Name != cronJob {
			continue
		}
		pods, err := n.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + j.Name})
		if err != nil {
			continue
		}
		for _, p := range pods.Items {
			logs, err := n.Client.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(t.Context())
			if err == nil && strings.Contains(string(logs), text) {
				return "job/" + j.Name + " pod/" + p.Name
			}
		}
	}
	return ""
}

// buildCLI builds the sporectl binary the operator runs.
func buildCLI(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sporectl")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-trimpath", "-o", bin, "../cmd/sporectl")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build ./cmd/sporectl: %s", out)
	return bin
}

// podLogs is the logs of the namespace's pods matching selector, for a
// failure's message.
func podLogs(t *testing.T, n *kubetest.Node, ns, selector string) string {
	pods, err := n.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		logs, err := n.Client.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(t.Context())
		if err != nil {
			logs = []byte(err.Error())
		}
		b.WriteString(p.Name + ":\n" + string(logs) + "\n")
	}
	return b.String()
}
