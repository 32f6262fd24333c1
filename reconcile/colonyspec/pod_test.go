package colonyspec

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

const podHead = "apiVersion: sporectl/v1\nkind: Colony\nmetadata: {name: lab}\nspec:\n"

func readPod(t *testing.T, spec string) []Document {
	t.Helper()
	docs, err := Read("lab.yaml", []byte(podHead+spec))
	require.NoError(t, err)
	return docs
}

// Pod options in a file: a spore's own and the colony's (spec.pod), and
// the colony's budget (spec.budget), planned against the store, replaced
// whole when given, kept when left out, exported back unchanged.
func TestPodOptionsInAColony(t *testing.T) {
	docs := readPod(t, `  budget: {tokensPerDay: 100000, costPerDay: "20"}
  pod:
    runtimeClassName: gvisor
    labels: {team: lab}
  spores:
  - id: red-1
    pod:
      nodeSelector: {pool: agents}
      tolerations:
      - {key: agents, operator: Exists, effect: NoExecute, tolerationSeconds: 30}
      envFromSecrets: [red-keys]
      annotations: {example.com/owner: red}
  - id: new-1
    pod: {labels: {tier: "1"}}
`)
	_, err := MakePlan(docs, stored, state.Settings{}, Options{})
	require.EqualError(t, err, `lab.yaml:15: spec.spores[0].pod.envFromSecrets[0]: Secret "red-keys" is not one the operator allows pods to name; add it to `+state.PodSecretsSetting,
		"a Secret the operator did not list is refused where the file names it")
	allowed := state.Settings{}.WithPodSecrets([]string{"red-keys"})
	p, err := MakePlan(docs, stored, allowed, Options{})
	require.NoError(t, err)
	require.Len(t, p.Changes, 3)
	colony := p.Changes[0]
	require.Equal(t, "colony", colony.Kind())
	require.Equal(t, &state.ColonySettings{Budget: state.Budget{TokensPerDay: 100000, CostPerDayMicros: 20_000_000},
		Pod: &state.PodOptions{RuntimeClassName: "gvisor", Labels: map[string]string{"team": "lab"}}}, colony.Settings)
	require.Equal(t, []Diff{{"budget", "none", "100000 tokens, $20.00 a day"}, {"pod", "none", "runtime class gvisor, 1 label"}}, colony.Diffs)

	thirty := int64(30)
	red := p.Changes[1]
	require.Equal(t, Configured, red.Action)
	require.NotNil(t, red.Spec)
	require.Equal(t, &state.PodOptions{NodeSelector: map[string]string{"pool": "agents"}, EnvFromSecrets: []string{"red-keys"},
		Tolerations: []state.Toleration{{Key: "agents", Operator: "Exists", Effect: "NoExecute", TolerationSeconds: &thirty}},
		Annotations: map[string]string{"example.com/owner": "red"}}, red.Spec.Spec.Pod)
	require.Equal(t, []Diff{{"pod", "none", "1 node selector, 1 toleration, 1 Secret, 1 annotation"}}, red.Diffs)
	require.Equal(t, Created, p.Changes[2].Action)
	require.Equal(t, &state.PodOptions{Labels: map[string]string{"tier": "1"}}, p.Changes[2].New.Spec.Pod)

	// Stored, the same file is no change; a file that leaves pod out
	// keeps it; `pod: {}` removes it.
	sp := slicesClone(stored)
	for i := range sp {
		if sp[i].ID == "red-1" {
			m := state.MergePod(red.Spec.Spec.Pod) // a copy, as the store reads it back
			sp[i].Spec.Pod = &m
		}
	}
	settings := allowed.WithColony("lab", *colony.Settings)
	docs = readPod(t, `  budget: {tokensPerDay: 100000, costPerDay: "20"}
  pod: {runtimeClassName: gvisor, labels: {team: lab}}
  spores:
  - id: red-1
    pod:
      nodeSelector: {pool: agents}
      tolerations: [{key: agents, operator: Exists, effect: NoExecute, tolerationSeconds: 30}]
      envFromSecrets: [red-keys]
      annotations: {example.com/owner: red}
`)
	p, err = MakePlan(docs, sp, settings, Options{})
	require.NoError(t, err)
	require.False(t, p.Changed(), "the stored options, said again")
	p, err = MakePlan(readPod(t, "  spores:\n  - {id: red-1}\n"), sp, settings, Options{})
	require.NoError(t, err)
	require.False(t, p.Changed(), "left out is kept")
	p, err = MakePlan(readPod(t, "  pod: {}\n  spores:\n  - {id: red-1, pod: {}}\n"), sp, settings, Options{})
	require.NoError(t, err)
	require.Len(t, p.Changes, 2)
	require.Nil(t, p.Changes[0].Settings.Pod, "the colony's removed")
	require.Equal(t, state.Budget{TokensPerDay: 100000, CostPerDayMicros: 20_000_000}, p.Changes[0].Settings.Budget, "its budget, left out, is kept")
	require.Nil(t, p.Changes[1].Spec.Spec.Pod, "the spore's removed")
	require.Equal(t, []Diff{{"pod", "1 node selector, 1 toleration, 1 Secret, 1 annotation", "none"}}, p.Changes[1].Diffs)

	// Export writes them, and the export plans unchanged.
	exp := Export("lab", sp, settings)
	require.NotNil(t, exp.Spec.Pod)
	require.Equal(t, "gvisor", *exp.Spec.Pod.RuntimeClassName)
	require.NotNil(t, exp.Spec.Budget)
	p, err = MakePlan([]Document{exp}, sp, settings, Options{})
	require.NoError(t, err)
	require.False(t, p.Changed(), "an export plans unchanged")
}

// A fault in pod options names the file, the line and the field by the
// file's own names (Kubernetes' camelCase), and nothing is read.
func TestPodOptionsFaultsNameTheField(t *testing.T) {
	for text, want := range map[string]string{
		"  pod: {runtimeClassName: Not_A_Class}\n  spores: []\n":                         `lab.yaml:5: spec.pod.runtimeClassName: invalid value "Not_A_Class"`,
		"  pod: {runtimeClassName: ''}\n  spores: []\n":                                  `lab.yaml:5: spec.pod.runtimeClassName: is empty`,
		"  spores:\n  - id: a\n    pod:\n      labels:\n        sporectl.dev/spore: b\n": `lab.yaml:9: spec.spores[0].pod.labels["sporectl.dev/spore"]: invalid value "sporectl.dev/spore"`,
		"  spores:\n  - {id: a, pod: {tolerations: [{key: a, effect: Sometimes}]}}\n":    `lab.yaml:6: spec.spores[0].pod.tolerations[0].effect: invalid value "Sometimes"`,
		"  spores:\n  - {id: a, pod: {tolerations: [{key: a, tolerationSeconds: 5}]}}\n": `spec.spores[0].pod.tolerations[0].tolerationSeconds`,
		"  spores:\n  - {id: a, pod: {tolerations: [{key: a, tolerationSeconds: x}]}}\n": `spec.spores[0].pod.tolerations[0].tolerationSeconds: want a whole number, not the value "x"`,
		"  spores:\n  - {id: a, pod: {envFromSecrets: [spore-b]}}\n":                     `lab.yaml:6: spec.spores[0].pod.envFromSecrets[0]: invalid value "spore-b"`,
		"  spores:\n  - {id: a, pod: {nodeSelector: {a: b, a: c}}}\n":                    `spec.spores[0].pod.nodeSelector["a"]: given twice`,
		"  spores:\n  - {id: a, pod: {nodeSelector: [a]}}\n":                             `spec.spores[0].pod.nodeSelector: want a mapping of keys to values, not a list`,
		"  spores:\n  - {id: a, pod: {gpu: 1}}\n":                                        `spec.spores[0].pod.gpu: unknown field "gpu" (the fields here: runtimeClassName, nodeSelector, tolerations, envFromSecrets, labels, annotations)`,
		"  budget: {costPerDay: lots}\n  spores: []\n":                                   `lab.yaml:5: spec.budget.costPerDay: invalid value "lots"`,
	} {
		docs, err := Read("lab.yaml", []byte(podHead+text))
		require.ErrorContains(t, err, want, text)
		require.Nil(t, docs, text)
	}
}
