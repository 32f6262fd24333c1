package kube_test

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sporectl/sporectl/bridge/fakeapi"
	"github.com/sporectl/sporectl/bridge/sporeenv"
	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/kube/images"
	"github.com/sporectl/sporectl/kube/images/imagestest"
	"github.com/sporectl/sporectl/kube/kubetest"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/pgstore"
)

// The model gateway on a real cluster (docs/gateway.md): serve as its
// Deployment from kube/deploy holds the model's key, from the
// sporectl-model Secret as docs/runtimes.md has an operator make it; a
// spore of the real spore image (Claude Code and the bridge), started by
// `sporectl init`'s kube runtime with the gateway on (the default), is
// prompted from outside and answers through serve's /model. The model's
// API (the fake Messages API behind a recorder that refuses any other key,
// as the real one would) sees every call come from serve with the real
// key; the spore's spend is what the gateway counted of those calls; and
// the key is in no place a spore can read: its pod's spec, its processes'
// environments, its home, the namespace's other Secrets.
func TestRealNodeGateway(t *testing.T) {
	n := kubetest.NewNode(t, kubetest.NodeOptions{})
	ctx := t.Context()
	require.NoError(t, n.ImportImage(ctx, sporectlImage(t)))
	began := time.Now()
	require.NoError(t, n.ImportImage(ctx, imagestest.Spore(t)))
	t.Logf("spore image imported in %s", time.Since(began).Round(10*time.Millisecond))
	p := newClusterPlane(t, n)

	// A key no other test and no file of the machine holds, so finding it
	// anywhere means it was copied there.
	var b [16]byte
	_, err := rand.Read(b[:])
	require.NoError(t, err)
	key := "sk-ant-realnode-" + hex.EncodeToString(b[:])

	api := fakeapi.New()
	api.Script(
		fakeapi.Rule{Match: "say hello", Steps: []fakeapi.Reply{fakeapi.Text("hello through serve's gateway")}},
		// Long enough to read the agent's process while its call waits.
		fakeapi.Rule{Match: "think a while", Steps: []fakeapi.Reply{fakeapi.Slow(15*time.Second, "thought it over")}},
		fakeapi.Rule{Match: "think again", Steps: []fakeapi.Reply{fakeapi.Slow(15*time.Second, "thought again")}},
	)
	up := &upstream{key: key, next: api}
	model := serveOn(t, n.IP, up)

	n.LocalVolumes(t, 1, "2Gi")
	const ns, id = "sporectl", "gw1"
	pod := kube.ObjectName(id)
	var clusterIP, servePod, servePodIP string

	step := func(name string, fn func(t *testing.T)) {
		require.True(t, t.Run(name, fn), "each step needs the one before")
	}

	step("serve deployed with the model's key from the sporectl-model Secret; init with the gateway on", func(t *testing.T) {
		p.run(t, p.kubectl, "create", "namespace", ns)
		p.run(t, p.kubectl, "-n", ns, "create", "secret", "generic", "sporectl-store", "--from-literal=url="+p.storeURL)
		// Through the API, not kubectl's arguments: no command line of the
		// machine ever holds the key.
		_, err := n.Client.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: kube.ModelSecret},
			StringData: map[string]string{"ANTHROPIC_API_KEY": key, "ANTHROPIC_BASE_URL": model},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, said, err := p.exec(t, p.cli, "init", "--runtime", "kube", "--image", images.SporeName,
			"--cpu", "1", "--memory", "1Gi", "--storage", "2Gi", "--no-operator")
		require.NoError(t, err, "init: %s", said)
		t.Logf("init says: %s", strings.TrimSpace(said))
		p.run(t, p.kubectl, "apply", "-k", "deploy")
		began := time.Now()
		p.run(t, p.kubectl, "-n", ns, "rollout", "status", "deployment/sporectl-serve", "--timeout=180s")
		t.Logf("serve's Deployment available %s after apply", time.Since(began).Round(100*time.Millisecond))

		clusterIP = p.run(t, p.kubectl, "-n", ns, "get", "svc", "sporectl-api", "-o", "jsonpath={.spec.clusterIP}")
		direct := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{Proxy: nil}}
		require.True(t, within(30*time.Second, func() bool {
			resp, err := direct.Get("http://" + clusterIP + "/healthz")
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		}), "serve not reached at its Service's ClusterIP %s", clusterIP)
		// No cluster DNS on this node: spores are told the ClusterIP.
		p.run(t, p.cli, "init", "--api-url", "http://"+clusterIP)

		sp := servePods(t, n, ns)
		require.Len(t, sp, 1)
		servePod, servePodIP = sp[0].Name, sp[0].Status.PodIP
		logs := podLogs(t, n, ns, "app.kubernetes.io/component=serve")
		assert.Contains(t, logs, "to "+model+", its key from $ANTHROPIC_API_KEY", "serve forwards to the Secret's base URL with the Secret's key")
	})

	step("a Claude Code spore woken and prompted from outside answers through serve's /model", func(t *testing.T) {
		p.run(t, p.cli, "create", id, "--wake", "--budget-tokens", "10000000")
		began := time.Now()
		p.run(t, p.cli, "wake", id, "--wait", "3m")
		t.Logf("spore (Claude Code) answering %s after wake", time.Since(began).Round(100*time.Millisecond))
		p.run(t, p.cli, "prompt", id, "please say hello")
		waitChat(t, p, id, "hello through serve's gateway")
		_, asked := api.LastRequestFor("say hello")
		require.True(t, asked, "the prompt reached the model")

		sporeIP := getPod(t, n, ns, pod).Status.PodIP
		calls := up.Calls()
		require.NotEmpty(t, calls)
		for i, c := range calls {
			// Never the values themselves in a message: one could be the
			// spore's token.
			assert.True(t, c.APIKey == key, "call %d (%s %s) came with the operator's key as x-api-key", i, c.Method, c.Path)
			assert.Zero(t, len(c.Authorization), "call %d (%s %s) has no Authorization header", i, c.Method, c.Path)
			assert.Equal(t, servePodIP, c.Remote, "call %d (%s %s) came from serve's pod %s, not the spore's %s", i, c.Method, c.Path, servePod, sporeIP)
			assert.Equal(t, http.StatusOK, c.Status, "call %d (%s %s)", i, c.Method, c.Path)
		}
	})

	step("the key is nowhere the spore can read: its pod's spec, its processes, its home", func(t *testing.T) {
		p.run(t, p.cli, "prompt", id, "think a while")
		require.Eventually(t, func() bool {
			_, asked := api.LastRequestFor("think a while")
			return asked
		}, 2*time.Minute, 200*time.Millisecond, "the slow turn never reached the model")

		// While the agent's call waits for the model, its process runs.
		sp := getPod(t, n, ns, pod)
		assertNoModelSecret(t, sp, key)
		assert.Contains(t, sp.Spec.Containers[0].Env, corev1.EnvVar{Name: sporeenv.ModelURL, Value: "http://" + clusterIP + sporeenv.ModelPath})
		procs, err := kubetest.ContainerProcs(sp.Status.ContainerStatuses[0].ContainerID)
		require.NoError(t, err)
		var agents int
		for _, pr := range procs {
			env := environ(pr.PID)
			if base, ok := envValue(env, "ANTHROPIC_BASE_URL"); ok {
				agents++
				assert.Equal(t, "http://"+clusterIP+sporeenv.ModelPath, base, "%s (pid %d in the container) calls serve's gateway", pr.Comm, pr.NSPID)
				k, _ := envValue(env, "ANTHROPIC_API_KEY")
				assert.True(t, strings.HasPrefix(k, id+":") && len(k) > len(id)+1, "%s (pid %d in the container) has the spore's ID:TOKEN as its key", pr.Comm, pr.NSPID)
			}
			if pr.NSPID == 1 {
				_, hasKey := envValue(env, "ANTHROPIC_API_KEY")
				assert.False(t, hasKey, "the bridge's own environment has no model key")
			}
		}
		assert.Positive(t, agents, "the agent's process was read while it ran: %+v", procs)

		inSpore := map[int]bool{}
		for _, pr := range procs {
			inSpore[pr.PID] = true
		}
		// The container's cgroup holds every process that runs as the
		// spore: none escaped the scan.
		asSpore := procsWithEnv(t, sporeenv.SporeID+"="+id)
		assert.NotEmpty(t, asSpore, "the bridge runs with its spore's id")
		for _, pid := range asSpore {
			assert.True(t, inSpore[pid], "host process %d (%s) runs as spore %s outside its container's cgroup", pid, procComm(pid), id)
		}
		serveProcs, err := kubetest.ContainerProcs(getPod(t, n, ns, servePod).Status.ContainerStatuses[0].ContainerID)
		require.NoError(t, err)
		inServe := map[int]bool{}
		for _, pr := range serveProcs {
			inServe[pr.PID] = true
		}
		holding := procsHolding(t, key)
		var servers int
		for pid, what := range holding {
			assert.False(t, inSpore[pid], "spore process %d (%s) holds the key", pid, what)
			assert.True(t, inServe[pid], "host process %d (%s) holds the key and is not serve", pid, what)
			if inServe[pid] {
				servers++
			}
		}
		assert.Positive(t, servers, "serve's process holds the key (the scan sees it where it is)")

		waitChat(t, p, id, "thought it over")

		home := homeOf(t, n, ns, sp)
		require.DirExists(t, home+"/.claude", "Claude Code kept its session in the home")
		found, read := filesHolding(t, home, key)
		assert.Empty(t, found, "files of the spore's home holding the key")
		t.Logf("read %d files of the spore's home (%s): none holds the key", read, home)

		secrets, err := n.Client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		for _, s := range secrets.Items {
			for k, v := range s.Data {
				assert.False(t, s.Name != kube.ModelSecret && strings.Contains(string(v), key), "Secret %s key %s holds the model's key", s.Name, k)
			}
		}
	})

	step("a key forged inside the spore is refused at the gateway and never reaches the model", func(t *testing.T) {
		out := p.run(t, p.kubectl, "-n", ns, "exec", pod, "-c", "bridge", "--", "node", "-e", forgedCalls)
		t.Logf("calls from inside the pod:\n%s", out)
		for _, want := range []string{"own 200 message", "forged 401 authentication_error", "borrowed 401 authentication_error", "none 401 authentication_error"} {
			assert.Contains(t, out, want)
		}
		_, own := api.LastRequestFor("call by own")
		assert.True(t, own, "the spore's own key works from inside its pod: the path is open")
		for _, name := range []string{"forged", "borrowed", "none"} {
			_, asked := api.LastRequestFor("call by " + name)
			assert.False(t, asked, "the %s call reached the model", name)
		}
	})

	// serve killed mid-call: the one call it held is the model's spend
	// that no spore got and nobody counted (docs/gateway.md, Counting).
	var killedAt time.Time
	step("serve killed while a spore's call waits at the model: restarted by the kubelet, it answers Claude Code's retry", func(t *testing.T) {
		p.run(t, p.cli, "prompt", id, "think again")
		require.Eventually(t, func() bool {
			_, asked := api.LastRequestFor("think again")
			return asked
		}, 2*time.Minute, 200*time.Millisecond, "the call never reached the model")
		sp := getPod(t, n, ns, servePod)
		restarts := sp.Status.ContainerStatuses[0].RestartCount
		proc := hostPIDOf(t, sp.Status.ContainerStatuses[0].ContainerID, 1)
		killedAt = time.Now()
		require.NoError(t, syscall.Kill(proc.PID, syscall.SIGKILL), "kill serve (%s), host pid %d", proc.Comm, proc.PID)
		waitPod(t, n, ns, servePod, "serve restarted and Ready", func(p *corev1.Pod) bool {
			return p.Status.ContainerStatuses[0].RestartCount > restarts && podReady(p)
		})
		t.Logf("serve Ready again %s after it was killed", time.Since(killedAt).Round(100*time.Millisecond))
		waitChat(t, p, id, "thought again")
		t.Logf("the turn finished %s after serve was killed", time.Since(killedAt).Round(100*time.Millisecond))
		var asked int
		for _, c := range up.Calls() {
			if c.Prompt == "think again" {
				asked++
			}
		}
		assert.GreaterOrEqual(t, asked, 2, "Claude Code called again after serve's death cut its call")
	})

	// What the gateway counted today, and what it counted of the call the
	// spore made itself, from inside its pod, outside any turn.
	var today, ownCall state.Spend
	step("the gateway counted every message the model answered, once and whole, priced", func(t *testing.T) {
		answered := map[string]state.Usage{}
		cut := map[string]bool{} // answered to a serve that died before it could pass the answer on
		var ownID string
		for _, c := range up.Calls() {
			if c.MsgID != "" && c.Prompt == "think again" && c.Start.Before(killedAt) {
				cut[c.MsgID] = true
				continue
			}
			if c.MsgID != "" {
				answered[c.MsgID] = c.Usage
			}
			if c.Prompt == "call by own" {
				ownID = c.MsgID
			}
		}
		require.NotEmpty(t, answered)
		require.NotEmpty(t, ownID, "the own call was answered")
		var want int64
		for _, u := range answered {
			want += u.Spend().Tokens
		}

		st, err := pgstore.Open(ctx, p.localURL, pgstore.Options{})
		require.NoError(t, err)
		defer st.Close()
		var sp state.Spore
		require.NoError(t, st.View(ctx, func(tx state.Tx) error {
			var err error
			sp, err = tx.Spore(ctx, id)
			return err
		}))
		counted := map[string]state.Usage{}
		for _, c := range sp.ModelCalls {
			u := c.Usage
			if c.ID == ownID {
				ownCall = u.Spend()
			}
			u.CostMicros = 0 // the model's answer carries no cost: the gateway prices it
			counted[c.ID] = u
		}
		assert.Equal(t, answered, counted, "every message the model answered counted once, whole")
		for msg := range cut {
			_, ok := counted[msg]
			assert.False(t, ok, "message %s, answered to the killed serve, which passed nothing on, is counted", msg)
		}
		t.Logf("%d answers went to the killed serve", len(cut))
		today = sp.GatewayRecord.CountedOn(time.Now()).Spend()
		assert.Equal(t, want, today.Tokens)
		// claude-sonnet-4-5 at $3 and $15 a million: 100 tokens in, 1 out.
		assert.Equal(t, state.Spend{Tokens: 101, CostMicros: 100*3 + 1*15}, ownCall, "the own call, priced by its model")
		t.Logf("the model answered %d messages, %d tokens; the gateway counted %s", len(answered), want, today.Text())
	})

	// The spend status shows is the gateway's count once status judges by
	// it (issue 37's part C); what the agent reported stays beside it, and
	// misses the call it made outside its turns.
	t.Run("status: the spore's spend is the gateway's count, the agent's report beside it", func(t *testing.T) {
		var doc struct {
			Spores []struct {
				Spend         *state.Spend `json:"spend"`
				ReportedSpend *state.Spend `json:"reported_spend"`
			} `json:"spores"`
		}
		out := p.run(t, p.cli, "status", "-o", "json", id)
		require.NoError(t, json.Unmarshal([]byte(out), &doc), "%s", out)
		require.Len(t, doc.Spores, 1)
		got := doc.Spores[0]
		require.NotNil(t, got.Spend, "%s", out)
		assert.Equal(t, today, *got.Spend, "status's spend is the gateway's count")
		if assert.NotNil(t, got.ReportedSpend, "status shows the agent's own report: %s", out) {
			assert.Equal(t, today.Tokens-ownCall.Tokens, got.ReportedSpend.Tokens, "the agent reported its turns' calls, not the one it made itself")
		}
	})

	t.Run("a spore at its budget by the gateway's count is refused at the gateway, before the model", func(t *testing.T) {
		// The CronJob's pass would put it to sleep by budget and take its
		// pod away: this step reads the gateway alone.
		p.run(t, p.kubectl, "-n", ns, "patch", "cronjob", "sporectl-reconcile", "-p", `{"spec":{"suspend":true}}`)
		p.run(t, p.cli, "set", "budget", id, "--tokens", "100")
		out := p.run(t, p.kubectl, "-n", ns, "exec", pod, "-c", "bridge", "--", "node", "-e", overBudgetCall)
		t.Logf("a call from inside the pod: %s", strings.TrimSpace(out))
		assert.Contains(t, out, "403 permission_error spore "+id+" is over its budget")
		_, asked := api.LastRequestFor("call over budget")
		assert.False(t, asked, "the call over budget reached the model")
	})

	t.Run("no log or output holds the key or the spore's token", func(t *testing.T) {
		sec, err := n.Client.CoreV1().Secrets(ns).Get(ctx, pod, metav1.GetOptions{})
		require.NoError(t, err)
		token := string(sec.Data[kube.SecretKeyAPIToken])
		require.NotEmpty(t, token)
		logs := podLogs(t, n, ns, "app.kubernetes.io/component=serve") + podLogs(t, n, ns, "app.kubernetes.io/component=spore")
		for what, secret := range map[string]string{"the model's key": key, "the spore's token": token} {
			for i, out := range p.outputs() {
				assert.False(t, strings.Contains(out, secret), "output %d of the commands run holds %s", i, what)
			}
			assert.False(t, strings.Contains(logs, secret), "serve's or the spore's log holds %s", what)
		}
	})
}

// forgedCalls is what an agent that reads its pod's environment can try:
// its own key (the control: it works), its id with a token it made up,
// another spore's id with its token, and no key.
const forgedCalls = `
const base = process.env.SPORECTL_MODEL_URL, id = process.env.SPORECTL_SPORE_ID, tok = process.env.SPORECTL_API_TOKEN;
const tries = [["own", id + ":" + tok], ["forged", id + ":not-its-token"], ["borrowed", "myco:" + tok], ["none", ""]];
(async () => {
  for (const [name, key] of tries) {
    const h = {"content-type": "application/json", "anthropic-version": "2023-06-01"};
    if (key) h["x-api-key"] = key;
    const r = await fetch(base + "/v1/messages", {method: "POST", headers: h,
      body: JSON.stringify({model: "claude-sonnet-4-5", max_tokens: 16, messages: [{role: "user", content: "call by " + name}]})});
    const b = await r.json().catch(() => ({}));
    console.log(name, r.status, (b.error && b.error.type) || b.type);
  }
})().catch((e) => { console.error(String(e)); process.exit(1); });
`

// overBudgetCall is one call with the spore's own key, printing the
// answer's status, error type and message.
const overBudgetCall = `
const key = process.env.SPORECTL_SPORE_ID + ":" + process.env.SPORECTL_API_TOKEN;
fetch(process.env.SPORECTL_MODEL_URL + "/v1/messages", {method: "POST",
  headers: {"content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": key},
  body: JSON.stringify({model: "claude-sonnet-4-5", max_tokens: 16, messages: [{role: "user", content: "call over budget"}]})})
  .then(async (r) => { const b = await r.json().catch(() => ({})); console.log(r.status, b.error ? b.error.type + " " + b.error.message : b.type); })
  .catch((e) => { console.error(String(e)); process.exit(1); });
`

// assertNoModelSecret checks that no container of the pod gets the model's
// Secret (as environment or a volume) or the key in its spec.
func assertNoModelSecret(t *testing.T, p *corev1.Pod, key string) {
	t.Helper()
	spec, err := json.Marshal(p.Spec)
	require.NoError(t, err)
	assert.False(t, strings.Contains(string(spec), key), "the pod's spec holds the key")
	assert.NotContains(t, string(spec), `"`+kube.ModelSecret+`"`, "the pod's spec names the model's Secret")
	for _, c := range append(append([]corev1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...) {
		for _, ef := range c.EnvFrom {
			assert.False(t, ef.SecretRef != nil && ef.SecretRef.Name == kube.ModelSecret, "container %s gets the model's Secret as its environment", c.Name)
		}
		for _, e := range c.Env {
			assert.False(t, strings.HasPrefix(e.Name, "ANTHROPIC_"), "container %s has %s in its spec", c.Name, e.Name)
		}
	}
}

// waitChat polls the spore's chat, as an operator reads it, until it holds
// want.
func waitChat(t *testing.T, p *clusterPlane, id, want string) {
	t.Helper()
	var chat string
	if !within(3*time.Minute, func() bool {
		chat = p.run(t, p.cli, "chat", id)
		return strings.Contains(chat, want)
	}) {
		t.Fatalf("no %q in %s's chat after 3 min:\n%s\nserve's log:\n%s", want, id, chat, podLogs(t, p.n, "sporectl", "app.kubernetes.io/component=serve"))
	}
}

func servePods(t *testing.T, n *kubetest.Node, ns string) []corev1.Pod {
	t.Helper()
	pods, err := n.Client.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/component=serve"})
	require.NoError(t, err)
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && podReady(&p) && net.ParseIP(p.Status.PodIP) != nil {
			out = append(out, p)
		}
	}
	return out
}

// homeOf is the host directory of the local volume bound to the pod's
// claim: the spore's home as it is on the node.
func homeOf(t *testing.T, n *kubetest.Node, ns string, p *corev1.Pod) string {
	t.Helper()
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim == nil {
			continue
		}
		pvc, err := n.Client.CoreV1().PersistentVolumeClaims(ns).Get(t.Context(), v.PersistentVolumeClaim.ClaimName, metav1.GetOptions{})
		require.NoError(t, err)
		require.NotEmpty(t, pvc.Spec.VolumeName, "claim %s bound", pvc.Name)
		return n.VolumePath(t, pvc.Spec.VolumeName)
	}
	t.Fatalf("pod %s has no claim", p.Name)
	return ""
}
