package kube_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/kube/podgrammar"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// The store's default pod options and the spore's, merged, are on the pod
// the API server stored; the claim and the Secret get none of them.
func TestPodOptionsOnThePod(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	// The RuntimeClass admission plugin refuses a pod whose class does
	// not exist; a class is cluster-wide, so it is named after the
	// test's namespace.
	class := "sandbox-" + e.ns
	_, err := e.admin.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Handler: "runsc"}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.admin.NodeV1().RuntimeClasses().Delete(t.Context(), class, metav1.DeleteOptions{}) })

	five := int64(5)
	store := &state.PodOptions{
		RuntimeClassName: "not-this-one",
		NodeSelector:     map[string]string{"pool": "agents", "zone": "a"},
		Tolerations:      []state.Toleration{{Key: "agents", Operator: "Exists", Effect: "NoSchedule"}},
		EnvFromSecrets:   []string{"colony-keys"},
		Labels:           map[string]string{"team": "platform", "cost": "shared"},
		Annotations:      map[string]string{"example.com/owner": "ops"},
	}
	rt, err := kube.New(e.saCfg, kube.Options{Namespace: e.ns, DefaultSpec: state.Spec{Pod: store}})
	require.NoError(t, err)
	s := spore("delta")
	s.Spec.Pod = &state.PodOptions{
		RuntimeClassName: class,
		NodeSelector:     map[string]string{"zone": "b"},
		Tolerations: []state.Toleration{
			{Key: "sandbox", Operator: "Equal", Value: "gvisor", Effect: "NoSchedule"},
			{Key: "flaky", Operator: "Exists", Effect: "NoExecute", TolerationSeconds: &five},
		},
		EnvFromSecrets: []string{"delta-keys", "shared-keys"},
		Labels:         map[string]string{"team": "moss"},
		Annotations:    map[string]string{"example.com/note": "line one\nline two"},
	}
	require.NoError(t, s.Validate())
	require.NoError(t, rt.Start(ctx, s, reconcile.Launch{Creds: creds("delta")}))

	pod, err := e.admin.CoreV1().Pods(e.ns).Get(ctx, "spore-delta", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, pod.Spec.RuntimeClassName)
	assert.Equal(t, class, *pod.Spec.RuntimeClassName, "the spore's class wins over the store's")
	assert.Equal(t, map[string]string{"pool": "agents", "zone": "b"}, pod.Spec.NodeSelector, "maps merge, the spore's value winning")
	assert.Subset(t, pod.Spec.Tolerations, []corev1.Toleration{
		{Key: "sandbox", Operator: corev1.TolerationOpEqual, Value: "gvisor", Effect: corev1.TaintEffectNoSchedule},
		{Key: "flaky", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &five},
	})
	for _, tol := range pod.Spec.Tolerations {
		assert.NotEqual(t, "agents", tol.Key, "the spore's list replaces the store's")
	}
	c := pod.Spec.Containers[0]
	require.Len(t, c.EnvFrom, 3, "the model's Secret, then the spore's (the store's list replaced)")
	assert.Equal(t, kube.ModelSecret, c.EnvFrom[0].SecretRef.Name)
	for i, name := range []string{"delta-keys", "shared-keys"} {
		ref := c.EnvFrom[i+1].SecretRef
		require.NotNil(t, ref)
		assert.Equal(t, name, ref.Name)
		assert.True(t, ref.Optional == nil || !*ref.Optional, "a Secret the operator named is not optional")
	}
	assert.Equal(t, map[string]string{
		"app.kubernetes.io/managed-by": "sporectl",
		"app.kubernetes.io/component":  "spore",
		"sporectl.dev/spore":           "delta",
		"sporectl.dev/colony":          "moss",
		"sporectl.dev/rank":            "spore",
		"team":                         "moss",
		"cost":                         "shared",
		"sporectl.dev/egress":          "all",
	}, pod.Labels)
	assert.Equal(t, map[string]string{
		"sporectl.dev/owner": "sporectl",
		"example.com/owner":  "ops",
		"example.com/note":   "line one\nline two",
	}, pod.Annotations)
	assert.True(t, kube.Owned(pod.ObjectMeta, "delta"))

	// Only the pod: the home and the tokens keep sporectl's marks alone.
	claim, err := e.admin.CoreV1().PersistentVolumeClaims(e.ns).Get(ctx, "spore-delta", metav1.GetOptions{})
	require.NoError(t, err)
	secret, err := e.admin.CoreV1().Secrets(e.ns).Get(ctx, "spore-delta", metav1.GetOptions{})
	require.NoError(t, err)
	for _, m := range []metav1.ObjectMeta{claim.ObjectMeta, secret.ObjectMeta} {
		assert.NotContains(t, m.Labels, "team", m.Name)
		assert.NotContains(t, m.Labels, "cost", m.Name)
		assert.Equal(t, map[string]string{"sporectl.dev/owner": "sporectl"}, m.Annotations, m.Name)
	}

	// A spore with no pod options of its own gets the store's.
	plain := spore("epsilon")
	pod, err = rt.PodSpecForTest(plain)
	require.NoError(t, err)
	assert.Equal(t, "not-this-one", *pod.Spec.RuntimeClassName)
	assert.Equal(t, "platform", pod.Labels["team"])
	assert.Equal(t, kube.ModelSecret, pod.Spec.Containers[0].EnvFrom[0].SecretRef.Name)
	assert.Equal(t, "colony-keys", pod.Spec.Containers[0].EnvFrom[1].SecretRef.Name)

	// A colony's pod options go between the store's and the spore's: a
	// spore of the colony without options of its own gets them over the
	// store's; the spore's own still win; another colony's spore does not.
	colony := &state.PodOptions{
		NodeSelector: map[string]string{"zone": "c"},
		Tolerations:  []state.Toleration{{Key: "moss-pool", Operator: "Exists"}},
		Labels:       map[string]string{"cost": "moss"},
	}
	layered, err := kube.New(e.saCfg, kube.Options{Namespace: e.ns, DefaultSpec: state.Spec{Pod: store},
		ColonyPods: map[string]*state.PodOptions{"moss": colony}})
	require.NoError(t, err)
	pod, err = layered.PodSpecForTest(plain)
	require.NoError(t, err)
	assert.Equal(t, "not-this-one", *pod.Spec.RuntimeClassName, "the colony sets no class: the store's")
	assert.Equal(t, map[string]string{"pool": "agents", "zone": "c"}, pod.Spec.NodeSelector)
	assert.Equal(t, "moss", pod.Labels["cost"])
	assert.Equal(t, "platform", pod.Labels["team"])
	require.Len(t, pod.Spec.Tolerations, 1, "the colony's list replaces the store's")
	assert.Equal(t, "moss-pool", pod.Spec.Tolerations[0].Key)
	pod, err = layered.PodSpecForTest(s)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"pool": "agents", "zone": "b"}, pod.Spec.NodeSelector, "the spore's value wins over its colony's")
	assert.Equal(t, "moss", pod.Labels["team"])
	assert.Equal(t, "moss", pod.Labels["cost"])
	other := spore("eta")
	other.Colony = "lichen"
	pod, err = layered.PodSpecForTest(other)
	require.NoError(t, err)
	assert.Equal(t, "shared", pod.Labels["cost"], "another colony's options are not this one's")

	// A class the cluster lacks is the API server's refusal, and Start
	// says which.
	missing := spore("zeta")
	missing.Spec.Pod = &state.PodOptions{RuntimeClassName: "no-such-class-" + e.ns}
	err = e.rt.Start(ctx, missing, reconcile.Launch{Creds: creds("zeta")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no-such-class-"+e.ns)
}

// A spore's pod options can never take over what marks a pod as
// sporectl's: every label and annotation key sporectl sets is reserved
// (kube/podgrammar), so a record naming one is refused; and were one stored anyway,
// sporectl's value is what the pod gets.
func TestPodOptionsCannotChangeOwnership(t *testing.T) {
	s := spore("eta")
	s.Swarm = "pack"
	pod, err := kube.Options{Namespace: "sporectl"}.PodFor(s, "")
	require.NoError(t, err)
	for k := range pod.Labels {
		assert.True(t, podgrammar.Reserved(k), "label %s is sporectl's and must be reserved", k)
	}
	for k := range pod.Annotations {
		assert.True(t, podgrammar.Reserved(k), "annotation %s is sporectl's and must be reserved", k)
	}
	assert.NotEmpty(t, podgrammar.SecretName(kube.ObjectName("eta")), "a spore's own Secret is never handed to another's environment")
	assert.NotEmpty(t, podgrammar.SecretName(kube.ModelSecret), "every pod has the model's Secret already")

	s.Spec.Pod = &state.PodOptions{
		Labels:      map[string]string{kube.LabelSpore: "other", kube.LabelManagedBy: "someone"},
		Annotations: map[string]string{kube.AnnotationOwner: "someone"},
	}
	require.Error(t, s.Validate())
	pod, err = kube.Options{Namespace: "sporectl"}.PodFor(s, "")
	require.NoError(t, err)
	assert.True(t, kube.Owned(pod.ObjectMeta, "eta"), "sporectl's marks win: %v %v", pod.Labels, pod.Annotations)
}

// The pods' grammar for keys, values and names (kube/podgrammar, which
// state checks records with) is Kubernetes' own: on each of these
// strings, it and apimachinery's validation agree.
func TestPodOptionsGrammarIsKubernetes(t *testing.T) {
	long := strings.Repeat("a", 63)
	words := []string{
		"", "a", "A", "a-b", "-a", "a-", "a_b", "a.b", "a..b", "_a", "a b", "ä", long, long + "a",
		"example.com/a", "Example.com/a", "example.com/", "/a", "a/b/c", "ex_ample.com/a", "a.-b/c",
		strings.Repeat("a.", 126) + "a/b", strings.Repeat("a.", 127) + "a/b", "a/" + long, "a/" + long + "b",
		"gvisor", "kata-qemu", "my.runtime", "1abc", "abc.", ".abc", strings.Repeat("a", 254),
	}
	for _, w := range words {
		assert.Equal(t, len(validation.IsQualifiedName(w)) == 0, podgrammar.LabelKey(w) == "", "label key %q", w)
		assert.Equal(t, len(validation.IsValidLabelValue(w)) == 0, podgrammar.LabelValue(w) == "", "label value %q", w)
		assert.Equal(t, len(validation.IsDNS1123Subdomain(w)) == 0, podgrammar.DNSSubdomain(w) == "", "subdomain %q", w)
	}
}

// No pod option can put a spore's pod into a selector of sporectl's own
// manifests (kube/deploy): every label key their NetworkPolicies select
// pods of the namespace by (the policies' own pods and their peers), and
// every key of their workloads' selectors, is reserved (kube/podgrammar).
// Else a label would give a spore serve's network reach, or join it to serve's
// Service.
func TestPodOptionsCannotJoinSporectlsSelectors(t *testing.T) {
	keys := map[string]bool{}
	add := func(m map[string]string) {
		for k := range m {
			keys[k] = true
		}
	}
	for _, u := range renderDeploy(t) {
		switch u.GetKind() {
		case "NetworkPolicy":
			var np networkingv1.NetworkPolicy
			require.NoError(t, runtimeFromUnstructured(u, &np))
			add(np.Spec.PodSelector.MatchLabels)
			peers := func(ps []networkingv1.NetworkPolicyPeer) {
				for _, p := range ps {
					// A peer in another namespace is not a spore's pod.
					if p.PodSelector != nil && p.NamespaceSelector == nil {
						add(p.PodSelector.MatchLabels)
					}
				}
			}
			for _, r := range np.Spec.Ingress {
				peers(r.From)
			}
			for _, r := range np.Spec.Egress {
				peers(r.To)
			}
		case "Deployment":
			var d appsv1.Deployment
			require.NoError(t, runtimeFromUnstructured(u, &d))
			add(d.Spec.Selector.MatchLabels)
		case "Service":
			var s corev1.Service
			require.NoError(t, runtimeFromUnstructured(u, &s))
			add(s.Spec.Selector)
		}
	}
	require.NotEmpty(t, keys)
	for k := range keys {
		assert.True(t, podgrammar.Reserved(k), "kube/deploy selects pods by %s, which a pod option could set", k)
	}
}

// The runtime takes each colony's pod options from the store's settings
// (what `colony set` and apply's spec.pod write); a colony without any
// adds no layer.
func TestOptionsFromSettingsTakeTheColoniesPodOptions(t *testing.T) {
	gvisor := &state.PodOptions{RuntimeClassName: "gvisor"}
	s := state.Settings{}.WithColony("moss", state.ColonySettings{Pod: gvisor}).
		WithColony("lichen", state.ColonySettings{WakeOnMessage: true})
	o := kube.OptionsFromSettings(s, kube.Cluster{})
	require.Equal(t, map[string]*state.PodOptions{"moss": gvisor}, o.ColonyPods)
	pod, err := o.PodFor(spore("theta"), "id-1")
	require.NoError(t, err)
	require.NotNil(t, pod.Spec.RuntimeClassName)
	assert.Equal(t, "gvisor", *pod.Spec.RuntimeClassName, "spore theta is of colony moss")
	other := spore("iota")
	other.Colony = "lichen"
	pod, err = o.PodFor(other, "id-2")
	require.NoError(t, err)
	assert.Nil(t, pod.Spec.RuntimeClassName)
}
