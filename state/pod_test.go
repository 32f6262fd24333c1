package state

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func secs(n int64) *int64 { return &n }

// Each refused value is refused with the field that holds it; each
// accepted one is accepted.
func TestPodOptionsValidate(t *testing.T) {
	long := strings.Repeat("a", 64)
	for _, tc := range []struct {
		name  string
		pod   *PodOptions
		field string // "" = valid
	}{
		{"nil", nil, ""},
		{"empty", &PodOptions{}, ""},
		{"all set", &PodOptions{
			RuntimeClassName: "gvisor",
			NodeSelector:     map[string]string{"kubernetes.io/arch": "amd64", "pool": ""},
			Tolerations: []Toleration{
				{Key: "sandbox", Operator: "Equal", Value: "gvisor", Effect: "NoSchedule"},
				{Key: "node.kubernetes.io/unreachable", Operator: "Exists", Effect: "NoExecute", TolerationSeconds: secs(300)},
				{Operator: "Exists"},
				{Key: "gpu", Value: "yes"},
			},
			EnvFromSecrets: []string{"team-keys", "model.v2"},
			Labels:         map[string]string{"team": "moss", "example.com/tier": "a_b.c-d"},
			Annotations:    map[string]string{"example.com/note": "free text: {\"json\": true}\n\tsecond line"},
		}, ""},
		{"runtime class uppercase", &PodOptions{RuntimeClassName: "gVisor"}, "spec.pod.runtime_class_name"},
		{"runtime class too long", &PodOptions{RuntimeClassName: strings.Repeat("a.", 127)}, "spec.pod.runtime_class_name"},
		{"label key bad", &PodOptions{Labels: map[string]string{"-x": "v"}}, `spec.pod.labels["-x"]`},
		{"label key name too long", &PodOptions{Labels: map[string]string{long: "v"}}, `spec.pod.labels["` + long + `"]`},
		{"label key empty prefix", &PodOptions{Labels: map[string]string{"/x": "v"}}, `spec.pod.labels["/x"]`},
		{"label key bad prefix", &PodOptions{Labels: map[string]string{"Example.com/x": "v"}}, `spec.pod.labels["Example.com/x"]`},
		{"label key two slashes", &PodOptions{Labels: map[string]string{"a/b/c": "v"}}, `spec.pod.labels["a/b/c"]`},
		{"label value too long", &PodOptions{Labels: map[string]string{"x": long}}, `spec.pod.labels["x"]`},
		{"label value bad", &PodOptions{Labels: map[string]string{"x": "a b"}}, `spec.pod.labels["x"]`},
		{"label reserved prefix", &PodOptions{Labels: map[string]string{"sporectl.dev/spore": "other"}}, `spec.pod.labels["sporectl.dev/spore"]`},
		{"label reserved managed-by", &PodOptions{Labels: map[string]string{"app.kubernetes.io/managed-by": "me"}}, `spec.pod.labels["app.kubernetes.io/managed-by"]`},
		{"label reserved name", &PodOptions{Labels: map[string]string{"app.kubernetes.io/name": "sporectl"}}, `spec.pod.labels["app.kubernetes.io/name"]`},
		{"label other app.kubernetes.io is fine", &PodOptions{Labels: map[string]string{"app.kubernetes.io/part-of": "lab"}}, ""},
		{"annotation reserved", &PodOptions{Annotations: map[string]string{"sporectl.dev/owner": "sporectl"}}, `spec.pod.annotations["sporectl.dev/owner"]`},
		{"annotation key bad", &PodOptions{Annotations: map[string]string{"a b": "v"}}, `spec.pod.annotations["a b"]`},
		{"annotation value too long", &PodOptions{Annotations: map[string]string{"x": strings.Repeat("v", MaxAnnotationValue+1)}}, `spec.pod.annotations["x"]`},
		{"annotation value control", &PodOptions{Annotations: map[string]string{"x": "a\x1b[2J"}}, `spec.pod.annotations["x"]`},
		{"annotation value not utf-8", &PodOptions{Annotations: map[string]string{"x": "\xff"}}, `spec.pod.annotations["x"]`},
		{"node selector may use sporectl keys", &PodOptions{NodeSelector: map[string]string{"sporectl.dev/pool": "a"}}, ""},
		{"node selector value bad", &PodOptions{NodeSelector: map[string]string{"pool": "a/b"}}, `spec.pod.node_selector["pool"]`},
		{"too many labels", &PodOptions{Labels: manyLabels(MaxPodMapEntries + 1)}, "spec.pod.labels"},
		{"toleration operator", &PodOptions{Tolerations: []Toleration{{Key: "k", Operator: "In"}}}, "spec.pod.tolerations[0].operator"},
		{"toleration effect", &PodOptions{Tolerations: []Toleration{{Key: "k", Effect: "NoRun"}}}, "spec.pod.tolerations[0].effect"},
		{"toleration exists with value", &PodOptions{Tolerations: []Toleration{{Key: "k", Operator: "Exists", Value: "v"}}}, "spec.pod.tolerations[0].value"},
		{"toleration empty key needs exists", &PodOptions{Tolerations: []Toleration{{Value: "v"}}}, "spec.pod.tolerations[0].operator"},
		{"the first bad toleration is named", &PodOptions{Tolerations: []Toleration{{}, {Key: "k k", Operator: "Exists"}}}, "spec.pod.tolerations[0].operator"},
		{"toleration second key bad", &PodOptions{Tolerations: []Toleration{{Operator: "Exists"}, {Key: "k k", Operator: "Exists"}}}, "spec.pod.tolerations[1].key"},
		{"toleration seconds without NoExecute", &PodOptions{Tolerations: []Toleration{{Key: "k", Operator: "Exists", Effect: "NoSchedule", TolerationSeconds: secs(1)}}}, "spec.pod.tolerations[0].toleration_seconds"},
		{"toleration seconds negative", &PodOptions{Tolerations: []Toleration{{Key: "k", Operator: "Exists", Effect: "NoExecute", TolerationSeconds: secs(-1)}}}, "spec.pod.tolerations[0].toleration_seconds"},
		{"too many tolerations", &PodOptions{Tolerations: make([]Toleration, MaxTolerations+1)}, "spec.pod.tolerations"},
		{"secret name bad", &PodOptions{EnvFromSecrets: []string{"ok", "Keys"}}, "spec.pod.env_from_secrets[1]"},
		{"secret name empty", &PodOptions{EnvFromSecrets: []string{""}}, "spec.pod.env_from_secrets[0]"},
		{"secret of a spore", &PodOptions{EnvFromSecrets: []string{"spore-w1"}}, "spec.pod.env_from_secrets[0]"},
		{"sporectl's store secret", &PodOptions{EnvFromSecrets: []string{"sporectl-store"}}, "spec.pod.env_from_secrets[0]"},
		{"sporectl's model secret", &PodOptions{EnvFromSecrets: []string{"sporectl-model"}}, "spec.pod.env_from_secrets[0]"},
		{"secret twice", &PodOptions{EnvFromSecrets: []string{"a", "b", "a"}}, "spec.pod.env_from_secrets[2]"},
		{"too many secrets", &PodOptions{EnvFromSecrets: make([]string, MaxEnvFromSecrets+1)}, "spec.pod.env_from_secrets"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.pod.Validate("spec.pod")
			if tc.field == "" {
				require.NoError(t, err)
				return
			}
			var inv *InvalidError
			require.True(t, errors.As(err, &inv), "want an *InvalidError, got %v", err)
			assert.Equal(t, tc.field, inv.Field, "%v", err)
		})
	}
}

func manyLabels(n int) map[string]string {
	m := make(map[string]string, n)
	for i := range n {
		m["k"+strings.Repeat("x", i%60)+string(rune('a'+i%26))+string(rune('a'+i/26))] = "v"
	}
	return m
}

// A spore's wish and a store's settings refuse bad pod options, naming
// where they sit.
func TestPodOptionsValidatedInWishAndSettings(t *testing.T) {
	bad := &PodOptions{Labels: map[string]string{"sporectl.dev/colony": "x"}}
	w := Wish{ID: "w1", Colony: "c", Rank: RankSpore, Desired: Paused, Spec: Spec{Pod: bad}}
	var inv *InvalidError
	require.ErrorAs(t, w.Validate(), &inv)
	assert.Equal(t, `spec.pod.labels["sporectl.dev/colony"]`, inv.Field)
	w.Spec.Pod = &PodOptions{Labels: map[string]string{"team": "moss"}}
	require.NoError(t, w.Validate())

	st := Settings{Runtime: "kube", DefaultSpec: Spec{Pod: &PodOptions{RuntimeClassName: "Kata"}}}
	require.ErrorAs(t, st.Validate(), &inv)
	assert.Equal(t, "default_spec.pod.runtime_class_name", inv.Field)
}

// The merge: a later layer's runtime class wins when set, maps merge key
// by key with the later value winning, a list a later layer sets replaces
// the earlier one, and the result shares nothing with the layers.
func TestMergePod(t *testing.T) {
	store := &PodOptions{
		RuntimeClassName: "gvisor",
		NodeSelector:     map[string]string{"pool": "agents", "zone": "a"},
		Tolerations:      []Toleration{{Key: "agents", Operator: "Exists", Effect: "NoSchedule"}},
		EnvFromSecrets:   []string{"colony-keys"},
		Labels:           map[string]string{"team": "platform", "cost": "shared"},
		Annotations:      map[string]string{"example.com/owner": "ops"},
	}
	for _, tc := range []struct {
		name   string
		layers []*PodOptions
		want   PodOptions
	}{
		{"none", nil, PodOptions{}},
		{"nil layers", []*PodOptions{nil, nil}, PodOptions{}},
		{"store only", []*PodOptions{store, nil}, *store},
		{"spore only", []*PodOptions{nil, {Labels: map[string]string{"a": "b"}}}, PodOptions{Labels: map[string]string{"a": "b"}}},
		{"spore overrides field by field", []*PodOptions{store, {
			RuntimeClassName: "kata",
			NodeSelector:     map[string]string{"zone": "b"},
			Tolerations:      []Toleration{{Key: "gpu", Operator: "Exists"}},
			Labels:           map[string]string{"team": "moss"},
		}}, PodOptions{
			RuntimeClassName: "kata",
			NodeSelector:     map[string]string{"pool": "agents", "zone": "b"},
			Tolerations:      []Toleration{{Key: "gpu", Operator: "Exists"}},
			EnvFromSecrets:   []string{"colony-keys"},
			Labels:           map[string]string{"team": "moss", "cost": "shared"},
			Annotations:      map[string]string{"example.com/owner": "ops"},
		}},
		{"an empty spore layer keeps the store's", []*PodOptions{store, {}}, *store},
		{"three layers, most specific last", []*PodOptions{store, {EnvFromSecrets: []string{"lab-keys"}, Labels: map[string]string{"cost": "lab"}}, {Labels: map[string]string{"cost": "w1"}}}, PodOptions{
			RuntimeClassName: "gvisor",
			NodeSelector:     map[string]string{"pool": "agents", "zone": "a"},
			Tolerations:      []Toleration{{Key: "agents", Operator: "Exists", Effect: "NoSchedule"}},
			EnvFromSecrets:   []string{"lab-keys"},
			Labels:           map[string]string{"team": "platform", "cost": "w1"},
			Annotations:      map[string]string{"example.com/owner": "ops"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, MergePod(tc.layers...))
		})
	}

	t.Run("shares nothing", func(t *testing.T) {
		l := &PodOptions{Labels: map[string]string{"a": "1"}, EnvFromSecrets: []string{"s"},
			Tolerations: []Toleration{{Key: "k", Operator: "Exists", Effect: "NoExecute", TolerationSeconds: secs(5)}}}
		got := MergePod(l)
		got.Labels["a"] = "2"
		got.EnvFromSecrets[0] = "t"
		*got.Tolerations[0].TolerationSeconds = 9
		assert.Equal(t, "1", l.Labels["a"])
		assert.Equal(t, "s", l.EnvFromSecrets[0])
		assert.Equal(t, int64(5), *l.Tolerations[0].TolerationSeconds)
	})
}

// Spec.WithDefaults and Or leave the pod options as the spore gave them:
// they are merged when a pod is made, never copied into the record.
func TestSpecDefaultsKeepPod(t *testing.T) {
	mine := &PodOptions{Labels: map[string]string{"a": "b"}}
	st := Settings{DefaultSpec: Spec{CPU: "1", Pod: &PodOptions{RuntimeClassName: "gvisor"}}}
	assert.Nil(t, Spec{}.WithDefaults(st).Pod)
	assert.Same(t, mine, Spec{Pod: mine}.WithDefaults(st).Pod)
	assert.Nil(t, Spec{}.Or(st.DefaultSpec).Pod)
}

func TestPodOptionsIsZero(t *testing.T) {
	assert.True(t, (*PodOptions)(nil).IsZero())
	assert.True(t, (&PodOptions{Labels: map[string]string{}}).IsZero())
	assert.False(t, (&PodOptions{EnvFromSecrets: []string{"x"}}).IsZero())
}

// What a spore's pod options add to each read of its record (a store
// decodes the record, and PostgreSQL validates every row it reads; every
// pass reads every record), for a document with a class, two node labels,
// three tolerations, two Secrets, four labels and two annotations.
func BenchmarkPodOptionsRead(b *testing.B) {
	p := &PodOptions{
		RuntimeClassName: "gvisor",
		NodeSelector:     map[string]string{"kubernetes.io/arch": "amd64", "pool": "agents"},
		Tolerations: []Toleration{
			{Key: "sandbox", Operator: "Equal", Value: "gvisor", Effect: "NoSchedule"},
			{Key: "node.kubernetes.io/unreachable", Operator: "Exists", Effect: "NoExecute", TolerationSeconds: secs(300)},
			{Key: "agents", Operator: "Exists"},
		},
		EnvFromSecrets: []string{"team-keys", "model-v2"},
		Labels:         map[string]string{"team": "moss", "example.com/tier": "a", "cost-center": "r-and-d", "env": "prod"},
		Annotations:    map[string]string{"example.com/note": "free text", "example.com/owner": "ops@example.com"},
	}
	doc, err := json.Marshal(p)
	require.NoError(b, err)
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var got PodOptions
			if err := json.Unmarshal(doc, &got); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("validate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := p.Validate("spec.pod"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkMergePod(b *testing.B) {
	store := &PodOptions{RuntimeClassName: "gvisor", Labels: map[string]string{"team": "platform", "cost": "shared"}, EnvFromSecrets: []string{"colony-keys"}}
	spore := &PodOptions{Labels: map[string]string{"team": "moss"}, Tolerations: []Toleration{{Key: "agents", Operator: "Exists"}}}
	b.ReportAllocs()
	for b.Loop() {
		_ = MergePod(store, spore)
	}
}
