package kube_test

import (
	"context"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"

	"github.com/sporectl/sporectl/bridge/sporeenv"
	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/kube/kubetest"
	"github.com/sporectl/sporectl/mycelia"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// netpolWorld is kube/deploy applied for real to a namespace of the test
// API server, with real pod objects in it: spores of every rank started
// by the runtime, serve's and reconcile's pods from their manifests'
// templates, and pods that must not get in (one unlabelled beside them,
// one labelled like serve in another namespace, kube-dns in kube-system).
// The test kubelet gives each an IP. Everything the evaluator sees is read
// back from the API server.
type netpolWorld struct {
	ns       string
	cluster  netpolCluster
	spores   map[string]*corev1.Pod // by spore id
	identity map[string]string      // spore id -> the identity its pod must carry
	serve    *corev1.Pod
	recon    *corev1.Pod
	stranger *corev1.Pod // no labels, the spores' namespace
	impostor *corev1.Pod // serve's labels, another namespace
	dns      *corev1.Pod
	apiSvc   *corev1.Service  // sporectl-api as stored
	apiAddrs []netip.AddrPort // the kubernetes Service and the API server's own addresses
	apiHost  netip.Addr       // the address the API server listens on (and proxies from)
}

func newNetpolWorld(t *testing.T) *netpolWorld {
	t.Helper()
	srv := kubetest.Shared(t)
	ctx := t.Context()
	admin, err := kubernetes.NewForConfig(srv.Config)
	require.NoError(t, err)
	w := &netpolWorld{ns: kubetest.Namespace(t, srv.Config), spores: map[string]*corev1.Pod{}, identity: map[string]string{}}
	applyDeploy(t, srv, admin, w.ns)

	var deployment *appsv1.Deployment
	var cron *batchv1.CronJob
	for _, o := range renderDeploy(t) {
		switch o.GetKind() {
		case "Deployment":
			deployment = &appsv1.Deployment{}
			require.NoError(t, runtimeFromUnstructured(o, deployment))
		case "CronJob":
			cron = &batchv1.CronJob{}
			require.NoError(t, runtimeFromUnstructured(o, cron))
		}
	}
	require.NotNil(t, deployment, "kube/deploy has serve's Deployment")
	require.NotNil(t, cron, "kube/deploy has reconcile's CronJob")

	kl := &kubetest.Kubelet{Client: admin, Namespace: w.ns}
	run := func(kl *kubetest.Kubelet, p *corev1.Pod) *corev1.Pod {
		t.Helper()
		created, err := admin.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err, "create pod %s%s", p.Name, p.GenerateName)
		return runningPod(t, admin, kl, created.Namespace, created.Name)
	}

	// Spores as the runtime makes them: every rank, with and without a
	// swarm, so a label that differs by rank cannot slip out of the policy.
	// Colony sealed's egress is "none" (serve and DNS alone).
	rt, err := kube.New(srv.Config, kube.Options{Namespace: w.ns, ColonyEgress: map[string]string{"sealed": state.EgressNone}})
	require.NoError(t, err)
	hermit := withRank(spore("hermit"), state.RankSpore, "")
	hermit.Colony = "sealed"
	for _, sp := range []state.Spore{
		hermit,
		withRank(spore("alpha"), state.RankSpore, "pack"),
		withRank(spore("beta"), state.RankSpore, ""),
		withRank(spore("lead"), state.RankSwarm, "pack"),
		withRank(spore("warden"), state.RankColony, ""),
		withRank(spore("arch"), state.RankArch, ""),
	} {
		// The text the pass hands Start (cmd/cli sets Pass.Identity).
		w.identity[sp.ID] = mycelia.Identity(sp)
		require.NoError(t, rt.Start(ctx, sp, reconcile.Launch{Identity: w.identity[sp.ID], Creds: creds(sp.ID)}))
		w.spores[sp.ID] = runningPod(t, admin, kl, w.ns, kube.ObjectName(sp.ID))
	}
	fromTemplate := func(tpl corev1.PodTemplateSpec, name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: w.ns, GenerateName: name + "-", Labels: tpl.Labels}, Spec: tpl.Spec}
	}
	w.serve = run(kl, fromTemplate(deployment.Spec.Template, deployment.Name))
	w.recon = run(kl, fromTemplate(cron.Spec.JobTemplate.Spec.Template, cron.Name))
	w.stranger = run(kl, restrictedPod(w.ns, "stranger", nil, nil))

	// Outside the namespace the kubelet hands out fixed addresses, apart
	// from the 10.244.0.x it gives in the spores' namespace.
	other := kubetest.Namespace(t, srv.Config)
	w.impostor = run(&kubetest.Kubelet{Client: admin, Namespace: other, IP: "10.244.250.1"},
		restrictedPod(other, "impostor", deployment.Spec.Template.Labels, []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}))
	dnsPod := restrictedPod("kube-system", "kube-dns", map[string]string{"k8s-app": "kube-dns"}, []corev1.ContainerPort{
		{Name: "dns", ContainerPort: 53, Protocol: corev1.ProtocolUDP},
		{Name: "dns-tcp", ContainerPort: 53, Protocol: corev1.ProtocolTCP},
		{Name: "metrics", ContainerPort: 9153, Protocol: corev1.ProtocolTCP},
	})
	// No controller manager runs, so kube-system has no default service
	// account for the pod until one is made.
	_, err = admin.CoreV1().ServiceAccounts("kube-system").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	w.dns = run(&kubetest.Kubelet{Client: admin, Namespace: "kube-system", IP: "10.244.250.2"}, dnsPod)
	t.Cleanup(func() {
		zero := int64(0)
		_ = admin.CoreV1().Pods("kube-system").Delete(context.WithoutCancel(ctx), w.dns.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	})

	// What the evaluator decides on: every namespace's labels and every
	// policy of the cluster, as stored.
	nss, err := admin.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	w.cluster.namespaces = map[string]labels.Set{}
	for _, n := range nss.Items {
		w.cluster.namespaces[n.Name] = n.Labels
	}
	nps, err := admin.NetworkingV1().NetworkPolicies("").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	w.cluster.policies = nps.Items

	w.apiSvc, err = admin.CoreV1().Services(w.ns).Get(ctx, "sporectl-api", metav1.GetOptions{})
	require.NoError(t, err)

	// The API server: its Service's ClusterIP, the endpoints behind it
	// when the server publishes them, and the address it listens on.
	k8s, err := admin.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	require.NoError(t, err)
	for _, ip := range k8s.Spec.ClusterIPs {
		for _, p := range k8s.Spec.Ports {
			w.apiAddrs = append(w.apiAddrs, netip.AddrPortFrom(netip.MustParseAddr(ip), uint16(p.Port)))
		}
	}
	slices, err := admin.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kubernetes"})
	require.NoError(t, err)
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			for _, a := range e.Addresses {
				for _, p := range s.Ports {
					if p.Port != nil {
						w.apiAddrs = append(w.apiAddrs, netip.AddrPortFrom(netip.MustParseAddr(a), uint16(*p.Port)))
					}
				}
			}
		}
	}
	u, err := url.Parse(srv.Config.Host)
	require.NoError(t, err)
	listen, err := netip.ParseAddrPort(u.Host)
	require.NoError(t, err)
	w.apiAddrs = append(w.apiAddrs, listen)
	w.apiHost = listen.Addr()
	return w
}

// runningPod schedules and runs a pod through the test kubelet and reads it
// back with its IP.
func runningPod(t *testing.T, admin kubernetes.Interface, kl *kubetest.Kubelet, ns, name string) *corev1.Pod {
	t.Helper()
	ctx := t.Context()
	require.NoError(t, kl.Schedule(ctx, name))
	require.NoError(t, kl.Run(ctx, name, true))
	p, err := admin.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, p.Status.PodIP, "pod %s/%s has an IP", ns, name)
	return p
}

// applyDeploy creates every object of kube/deploy for real in ns (the
// manifests' namespace moved there; its Pod Security labels copied).
func applyDeploy(t *testing.T, srv *kubetest.Server, admin kubernetes.Interface, ns string) {
	t.Helper()
	applyDeployKinds(t, srv, admin, ns)
}

// applyDeployKinds is applyDeploy for only the objects of the given kinds
// (all when none is given): a real node runs what it is given.
func applyDeployKinds(t *testing.T, srv *kubetest.Server, admin kubernetes.Interface, ns string, kinds ...string) {
	t.Helper()
	ctx := t.Context()
	dyn, err := dynamic.NewForConfig(srv.Config)
	require.NoError(t, err)
	disc, err := discovery.NewDiscoveryClientForConfig(srv.Config)
	require.NoError(t, err)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	for _, o := range renderDeploy(t) {
		if len(kinds) > 0 && !slices.Contains(kinds, o.GetKind()) {
			continue
		}
		if o.GetKind() == "Namespace" {
			nsObj, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			require.NoError(t, err)
			for k, v := range o.GetLabels() {
				nsObj.Labels[k] = v
			}
			_, err = admin.CoreV1().Namespaces().Update(ctx, nsObj, metav1.UpdateOptions{})
			require.NoError(t, err)
			continue
		}
		moveNamespace(t, o, "sporectl", ns)
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		require.NoError(t, err, "%s is served", gvk)
		ri := dynamic.ResourceInterface(dyn.Resource(m.Resource).Namespace(ns))
		if m.Scope.Name() == meta.RESTScopeNameRoot {
			// The [arch]'s ClusterRole and its binding (named after ns by
			// moveNamespace), removed with the test.
			ri = dyn.Resource(m.Resource)
			name := o.GetName()
			t.Cleanup(func() { _ = ri.Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{}) })
		}
		_, err = ri.Create(ctx, o, metav1.CreateOptions{FieldManager: "sporectl-test"})
		require.NoError(t, err, "create %s %s", o.GetKind(), o.GetName())
	}
}

// restrictedPod is a pod that passes the restricted Pod Security Standard.
func restrictedPod(ns, name string, l map[string]string, ports []corev1.ContainerPort) *corev1.Pod {
	yes, no, uid := true, false, int64(1000)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: name + "-", Labels: l},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: &no,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: &yes, RunAsUser: &uid,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name: "c", Image: "example.invalid/" + name, Ports: ports,
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: &no,
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
}

func withRank(s state.Spore, r state.Rank, swarm string) state.Spore {
	s.Rank, s.Swarm = r, swarm
	if swarm != "" {
		s.Role = "worker"
	}
	return s
}

// serveTarget follows a spore's SPORECTL_API_URL the way its traffic
// goes: the Service it names (in the spore's namespace), that Service's
// port, its targetPort on the pod it selects. It returns serve's pod and
// the port a connection arrives on there, which is what a NetworkPolicy
// sees (after the Service's address translation).
func (w *netpolWorld) serveTarget(t *testing.T, sporePod *corev1.Pod) (netEnd, int32) {
	t.Helper()
	raw := envOf(sporePod)[sporeenv.APIURL]
	u, err := url.Parse(raw)
	require.NoError(t, err, "SPORECTL_API_URL %q", raw)
	name, ok := strings.CutSuffix(u.Hostname(), "."+sporePod.Namespace+".svc")
	require.True(t, ok, "SPORECTL_API_URL %q names a Service of the spore's namespace", raw)
	require.Equal(t, w.apiSvc.Name, name, "SPORECTL_API_URL names serve's Service")
	port := int32(80)
	if u.Scheme == "https" {
		port = 443
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		require.NoError(t, err)
		port = int32(n)
	}
	sel := labels.SelectorFromSet(w.apiSvc.Spec.Selector)
	require.True(t, sel.Matches(labels.Set(w.serve.Labels)), "the Service selects serve's pod")
	for id, p := range w.spores {
		require.False(t, sel.Matches(labels.Set(p.Labels)), "the Service must not select spore %s", id)
	}
	for _, sp := range w.apiSvc.Spec.Ports {
		if sp.Port != port {
			continue
		}
		if sp.TargetPort.Type == intstr.String {
			n := containerPort(w.serve, sp.TargetPort.StrVal, corev1.ProtocolTCP)
			require.NotZero(t, n, "serve's pod has the port %q its Service targets", sp.TargetPort.StrVal)
			return podEnd(w.serve), n
		}
		return podEnd(w.serve), sp.TargetPort.IntVal
	}
	t.Fatalf("Service %s has no port %d (SPORECTL_API_URL %s)", w.apiSvc.Name, port, raw)
	return netEnd{}, 0
}

func envOf(p *corev1.Pod) map[string]string {
	env := map[string]string{}
	for _, c := range p.Spec.Containers {
		for _, e := range c.Env {
			env[e.Name] = e.Value
		}
	}
	return env
}

// On the policies the API server stored, for the pods it stored: spores
// reach serve (through the address the runtime gives them), DNS and public
// addresses (the model's endpoint), and nothing else — not another spore,
// reconcile, the API server (but the [arch] does, on its ports), their
// node, cloud metadata or any private address; only serve and reconcile
// reach a spore's bridge port.
func TestNetworkPolicyLetsSporesReachOnlyServeAndTheModel(t *testing.T) {
	w := newNetpolWorld(t)
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	bridgePort := func(p *corev1.Pod) int32 {
		n := containerPort(p, "bridge", tcp)
		require.Equal(t, int32(kube.BridgePort), n, "the bridge listens where the runtime dials it")
		return n
	}

	// The policy confines exactly the spores, in both directions, and
	// neither serve nor reconcile. This is where a change to the labels
	// the runtime puts on its pods shows.
	// Their egress is widened by spores-internet unless their colony's
	// egress is none, and the [arch]'s by arch-api (to the API server).
	for _, tc := range []struct {
		pod      *corev1.Pod
		isolated bool
		arch     bool
		sealed   bool
	}{
		{w.spores["alpha"], true, false, false}, {w.spores["beta"], true, false, false}, {w.spores["lead"], true, false, false},
		{w.spores["warden"], true, false, false}, {w.spores["arch"], true, true, false}, {w.spores["hermit"], true, false, true},
		{w.serve, false, false, false}, {w.recon, false, false, false},
	} {
		for _, dir := range []string{"Ingress", "Egress"} {
			var by []string
			for _, np := range w.cluster.policies {
				if np.Namespace == w.ns && selectorMatches(&np.Spec.PodSelector, tc.pod.Labels) && hasType(np, networkingv1.PolicyType(dir)) {
					by = append(by, np.Name)
				}
			}
			switch {
			case tc.arch && dir == "Egress":
				assert.ElementsMatch(t, []string{"spores", "spores-internet", "arch-api"}, by, "%s of %s (labels %v)", dir, tc.pod.Name, tc.pod.Labels)
			case tc.sealed && dir == "Egress":
				assert.Equal(t, []string{"spores"}, by, "%s of %s (labels %v): its colony's egress is none", dir, tc.pod.Name, tc.pod.Labels)
			case tc.isolated && dir == "Egress":
				assert.ElementsMatch(t, []string{"spores", "spores-internet"}, by, "%s of %s (labels %v)", dir, tc.pod.Name, tc.pod.Labels)
			case tc.isolated:
				assert.Equal(t, []string{"spores"}, by, "%s of %s (labels %v) is isolated by the spores policy", dir, tc.pod.Name, tc.pod.Labels)
			default:
				assert.Empty(t, by, "%s of %s is not confined", dir, tc.pod.Name)
			}
		}
	}

	type conn struct {
		name     string
		from, to netEnd
		proto    corev1.Protocol
		port     int32
		allow    bool
	}
	var conns []conn
	for id, sp := range w.spores {
		from := podEnd(sp)
		isArch := sp.Labels[kube.LabelRank] == string(state.RankArch)
		internet := sp.Labels[kube.LabelEgress] != state.EgressNone
		serveEnd, servePort := w.serveTarget(t, sp)
		conns = append(conns,
			conn{"spore → serve, through SPORECTL_API_URL", from, serveEnd, tcp, servePort, true},
			conn{"spore → serve on another port", from, serveEnd, tcp, 9090, false},
			conn{"spore → kube-dns UDP", from, podEnd(w.dns), udp, 53, true},
			conn{"spore → kube-dns TCP", from, podEnd(w.dns), tcp, 53, true},
			conn{"spore → kube-dns metrics", from, podEnd(w.dns), tcp, 9153, false},
			conn{"spore → reconcile's pod", from, podEnd(w.recon), tcp, 8080, false},
			conn{"spore → a pod labelled like serve in another namespace", from, podEnd(w.impostor), tcp, 8080, false},
			conn{"spore → an unlabelled pod beside it", from, podEnd(w.stranger), tcp, 8080, false},
			conn{"spore → its node's kubelet", from, addrEnd(sp.Status.HostIP), tcp, 10250, false},
			conn{"spore → the model (api.anthropic.com, 160.79.104.0/23)", from, addrEnd("160.79.104.10"), tcp, 443, internet},
			conn{"spore → the model over IPv6 (2607:6bc0::/48)", from, addrEnd("2607:6bc0::10"), tcp, 443, internet},
			conn{"spore → a public git host over ssh", from, addrEnd("140.82.112.3"), tcp, 22, internet},
		)
		for _, addr := range []string{"169.254.169.254", "fd00:ec2::254", "100.100.100.200"} {
			conns = append(conns, conn{"spore → cloud metadata " + addr, from, addrEnd(addr), tcp, 80, false})
		}
		for _, addr := range []string{"10.1.2.3", "172.16.5.4", "192.168.1.1", "100.64.0.1", "127.0.0.1", "0.0.0.1", "192.0.0.9", "198.18.0.1", "224.0.0.251", "240.0.0.1", "fd12::1", "fe80::1", "ff02::fb", "::1"} {
			// arch-api names no address (the API server's is the
			// cluster's), so the [arch] reaches the API ports of any.
			conns = append(conns,
				conn{"spore → private " + addr + " on an API server's port", from, addrEnd(addr), tcp, 443, isArch},
				conn{"spore → private " + addr, from, addrEnd(addr), tcp, 8443, false},
			)
		}
		for _, ap := range w.apiAddrs {
			if isArch && ap.Port() != 443 && ap.Port() != 6443 {
				// The test API server's own random port stands for no
				// real cluster's; the control plane's ports are below.
				continue
			}
			conns = append(conns, conn{"spore → the API server at " + ap.String(), from, addrEnd(ap.Addr().String()), tcp, int32(ap.Port()), isArch})
		}
		// The API server after kube-proxy's translation, as kubeadm, k3s
		// and kind publish it: only the [arch] gets there, and on no
		// other port of that address.
		conns = append(conns,
			conn{"spore → the control plane's API port", from, addrEnd("10.0.0.2"), tcp, 6443, isArch},
			conn{"spore → the control plane's kubelet", from, addrEnd("10.0.0.2"), tcp, 10250, false},
		)
		for otherID, other := range w.spores {
			if otherID == id {
				continue
			}
			conns = append(conns,
				conn{"spore → another spore's bridge", from, podEnd(other), tcp, bridgePort(other), false},
				conn{"spore → another spore, any port", from, podEnd(other), tcp, 22, false},
			)
		}
		to := podEnd(sp)
		conns = append(conns,
			conn{"serve → spore bridge", podEnd(w.serve), to, tcp, bridgePort(sp), true},
			conn{"reconcile → spore bridge", podEnd(w.recon), to, tcp, bridgePort(sp), true},
			conn{"serve → spore, another port", podEnd(w.serve), to, tcp, 22, false},
			conn{"an unlabelled pod beside it → spore bridge", podEnd(w.stranger), to, tcp, bridgePort(sp), false},
			conn{"a pod labelled like serve in another namespace → spore bridge", podEnd(w.impostor), to, tcp, bridgePort(sp), false},
			conn{"kube-dns → spore bridge", podEnd(w.dns), to, tcp, bridgePort(sp), false},
			conn{"outside the cluster → spore bridge", addrEnd("203.0.113.7"), to, tcp, bridgePort(sp), false},
			// The pod proxy's connections come from the control plane, not
			// a pod: refused unless the policy is given its address
			// (networkpolicy.yaml, docs/runtimes.md).
			conn{"the API server's pod proxy → spore bridge", addrEnd(w.apiHost.String()), to, tcp, bridgePort(sp), false},
		)
	}
	// serve is not confined: the Ingress controller (or kubectl
	// port-forward) reaches the page there.
	serveEnd, servePort := w.serveTarget(t, w.spores["alpha"])
	conns = append(conns,
		conn{"outside the cluster → serve", addrEnd("203.0.113.7"), serveEnd, tcp, servePort, true},
		conn{"a pod of another namespace → serve", podEnd(w.impostor), serveEnd, tcp, servePort, true},
	)

	for _, c := range conns {
		got, why := w.cluster.allows(c.from, c.to, c.proto, c.port)
		assert.Equal(t, c.allow, got, "%s: %s → %s %s/%d %s", c.name, c.from, c.to, c.proto, c.port, why)
	}
}

// A spore's pod, as the runtime makes it and the API server stores it,
// gives `mycologist` and `swarm` in it what they read (mycelia's client
// environment): with the pod's env resolved as the kubelet does (values,
// and keys of the spore's Secret as stored), the client's config names
// serve's Service in the pod's namespace, the spore, and its API token;
// and the agent is told who it is.
func TestSporePodEnvReachesServe(t *testing.T) {
	w := newNetpolWorld(t)
	srv := kubetest.Shared(t)
	admin, err := kubernetes.NewForConfig(srv.Config)
	require.NoError(t, err)
	for id, p := range w.spores {
		require.Len(t, p.Spec.Containers, 1)
		env := map[string]string{}
		for _, e := range p.Spec.Containers[0].Env {
			switch {
			case e.ValueFrom == nil:
				env[e.Name] = e.Value
			case e.ValueFrom.SecretKeyRef != nil:
				sec, err := admin.CoreV1().Secrets(p.Namespace).Get(t.Context(), e.ValueFrom.SecretKeyRef.Name, metav1.GetOptions{})
				require.NoError(t, err, "%s: %s's Secret", id, e.Name)
				v, ok := sec.Data[e.ValueFrom.SecretKeyRef.Key]
				require.True(t, ok, "%s: %s names a key its Secret has", id, e.Name)
				env[e.Name] = string(v)
			default:
				t.Fatalf("%s: %s comes from something other than a value or a Secret", id, e.Name)
			}
		}
		cfg, err := mycelia.ConfigFromEnv(func(k string) string { return env[k] })
		require.NoError(t, err, id)
		_, err = mycelia.NewClient(cfg)
		require.NoError(t, err, id)
		assert.Equal(t, "http://"+w.apiSvc.Name+"."+w.ns+".svc", cfg.URL, id)
		assert.Equal(t, id, cfg.Spore, id)
		// Compared, never printed: a token stays out of test output.
		assert.True(t, cfg.Token == creds(id).APIToken, "%s: the client reads the spore's API token from its Secret", id)
		assert.Equal(t, w.identity[id], env[sporeenv.Identity], id)
		assert.Contains(t, env[sporeenv.Identity], id, "%s: the identity names the spore", id)
		_, _, err = net.SplitHostPort(env["SPORECTL_BRIDGE_ADDR"])
		assert.NoError(t, err, "%s: SPORECTL_BRIDGE_ADDR is host:port", id)
	}
}
