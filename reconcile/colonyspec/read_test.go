package colonyspec

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const labDoc = `apiVersion: sporectl/v1
kind: Colony
metadata:
  name: lab
spec:
  defaults:
    image: ghcr.io/org/spore:1
    resources: {cpu: "1", memory: 2Gi}
  spores:
  - id: lab-myco
    rank: colony
    desired: Running
  - id: red-1
    swarm: red
    role: dev
    resources:
      cpu: 2
`

func TestReadDecodesADocument(t *testing.T) {
	docs, err := Read("lab.yaml", []byte(labDoc+"---\n---\n"+strings.Replace(labDoc, "name: lab", "name: ops", 1)))
	require.NoError(t, err)
	require.Len(t, docs, 2, "empty documents are skipped")
	d := docs[0]
	require.Equal(t, "lab", d.Metadata.Name)
	require.Equal(t, "ops", docs[1].Metadata.Name)
	require.Equal(t, "ghcr.io/org/spore:1", *d.Spec.Defaults.Image)
	require.Len(t, d.Spec.Spores, 2)
	s := d.Spec.Spores[1]
	require.Equal(t, "red-1", s.ID)
	require.Nil(t, s.Rank, "a field left out is nil")
	require.Equal(t, "2", *s.Resources.CPU, "a number is read as its text")
	require.Nil(t, s.Resources.Memory)
	f := s.merged(d.Spec.Defaults)
	require.Equal(t, "2", *f.Resources.CPU, "the spore's own value wins")
	require.Equal(t, "2Gi", *f.Resources.Memory, "what it leaves out comes from spec.defaults")
	require.Equal(t, "ghcr.io/org/spore:1", *f.Image)
	file, line := d.src.at("spec.spores[1].resources.cpu")
	require.Equal(t, "lab.yaml", file)
	require.Equal(t, 17, line)
	_, line = d.src.at("spec.spores[1].loop")
	require.Equal(t, 13, line, "a field left out is placed at its spore")
}

func TestReadNamesFileLineAndField(t *testing.T) {
	head := "apiVersion: sporectl/v1\nkind: Colony\nmetadata: {name: lab}\nspec:\n  spores:\n"
	tests := []struct {
		name string
		yaml string
		want []string // each error's text, in order
	}{
		{"an unknown field", head + "  - id: a\n    quota: 4\n",
			[]string{`lab.yaml:7: spec.spores[0].quota: unknown field "quota" (the fields here: id, rank, swarm, role, loop, sleepAfter, pod, desired, image, resources, budget)`}},
		{"an unknown top-level field", "apiVersion: sporectl/v1\nkind: Colony\nmetadata: {name: lab}\nstatus: {}\nspec: {spores: []}\n",
			[]string{`lab.yaml:4: status: unknown field "status" (the fields here: apiVersion, kind, metadata, spec)`}},
		{"an unknown field with a terminal escape", head + "  - id: a\n    \"\\e[31mred\": 4\n",
			[]string{`lab.yaml:7: spec.spores[0]."\x1b[31mred": unknown field "\x1b[31mred" (the fields here: id, rank, swarm, role, loop, sleepAfter, pod, desired, image, resources, budget)`}},
		{"a field twice", head + "  - id: a\n    rank: spore\n    rank: colony\n",
			[]string{`lab.yaml:8: spec.spores[0].rank: given twice (first at line 7)`}},
		{"a mapping for a value", head + "  - id: a\n    image: {name: x}\n",
			[]string{`lab.yaml:7: spec.spores[0].image: want a single value, not a mapping`}},
		{"a value for a list", head[:len(head)-len("  spores:\n")] + "  spores: a\n",
			[]string{`lab.yaml:5: spec.spores: want a list, not the value "a"`}},
		{"bad values", head + "  - id: Bad\n    rank: king\n    desired: running\n    loop: 10s\n    image: 'a b'\n    resources: {cpu: lots, memory: '0', storage: 2Pi}\n",
			[]string{
				`lab.yaml:6: spec.spores[0].id: invalid value "Bad": contains 'B' at position 1; only lowercase letters, digits and '-' are allowed`,
				`lab.yaml:7: spec.spores[0].rank: invalid value "king": want one of spore, swarm, colony, arch`,
				`lab.yaml:8: spec.spores[0].desired: invalid value "running": want one of Running, Paused, Stopped`,
				`lab.yaml:9: spec.spores[0].loop: invalid value "10s": want 0 (no loop) or from 1m0s to 24h0m0s`,
				`lab.yaml:10: spec.spores[0].image: invalid value "a b": want an image reference such as ghcr.io/org/spore:1.2`,
				`lab.yaml:11: spec.spores[0].resources.cpu: invalid value "lots": want a Kubernetes quantity such as 2, 500m, 3Gi`,
				`lab.yaml:11: spec.spores[0].resources.memory: invalid value "0": must be more than zero`,
				`lab.yaml:11: spec.spores[0].resources.storage: invalid value "2Pi": at most 1Pi`,
			}},
		{"an empty image", head + "  - id: a\n    image: ''\n",
			[]string{`lab.yaml:7: spec.spores[0].image: is empty: give an image such as ghcr.io/org/spore:1.2, or leave the field out`}},
		{"no id", head + "  - rank: spore\n",
			[]string{`lab.yaml:6: spec.spores[0].id: a spore's id is required`}},
		{"an id twice", head + "  - id: a\n  - id: a\n",
			[]string{`lab.yaml:7: spec.spores[1].id: spore a is listed twice (first at lab.yaml:6: spec.spores[0])`}},
		{"the wrong kind and version", "apiVersion: v1\nkind: Pod\nmetadata: {name: lab}\n",
			[]string{`lab.yaml:1: apiVersion: want "sporectl/v1", not "v1"`, `lab.yaml:2: kind: want "Colony", not "Pod"`}},
		{"no name", "apiVersion: sporectl/v1\nkind: Colony\nspec: {}\n",
			[]string{`lab.yaml:1: metadata.name: the colony's name is required`}},
		{"not YAML", "apiVersion: sporectl/v1\nkind: Colony: x\n",
			[]string{`lab.yaml:2: not valid YAML: mapping values are not allowed in this context`}},
		{"the second document bad", labDoc + "---\napiVersion: sporectl/v1\nkind: Colony\nmetadata: {name: ops}\nspec:\n  spores:\n  - id: b\n    desird: Running\n",
			[]string{`lab.yaml:25: spec.spores[0].desird: unknown field "desird" (the fields here: id, rank, swarm, role, loop, sleepAfter, pod, desired, image, resources, budget)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := Read("lab.yaml", []byte(tt.yaml))
			require.Error(t, err)
			require.Nil(t, docs, "a fault anywhere returns no document")
			var got []string
			for _, e := range unjoin(err) {
				var fe *Error
				require.ErrorAs(t, e, &fe)
				got = append(got, e.Error())
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestReadBoundsTheFaultsItReports(t *testing.T) {
	var b strings.Builder
	b.WriteString("apiVersion: sporectl/v1\nkind: Colony\nmetadata: {name: lab}\nspec:\n  spores:\n")
	for range 30 {
		b.WriteString("  - {id: a-b, x: 1}\n")
	}
	_, err := Read("big.yaml", []byte(b.String()))
	errs := unjoin(err)
	require.Len(t, errs, MaxErrors+1)
	require.EqualError(t, errs[MaxErrors], "big.yaml: and 10 more")
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// A fault quotes at most a short prefix of a huge value (and says how
// long it was), still naming the file, line and field.
func TestReadBoundsTheValuesItQuotes(t *testing.T) {
	big := strings.Repeat("x", 30<<20)
	head := "apiVersion: sporectl/v1\nkind: Colony\nmetadata: {name: lab}\nspec:\n  spores:\n"
	for name, c := range map[string]struct{ yaml, field string }{
		"an image":       {head + "  - id: a\n    image: '" + big + "'\n", "lab.yaml:7: spec.spores[0].image: invalid value \"xxx"},
		"an id":          {head + "  - id: " + big + "\n", "lab.yaml:6: spec.spores[0].id: invalid value \"xxx"},
		"an unknown key": {head + "  - id: a\n    ? " + big + "\n    : 1\n", "lab.yaml:7: spec.spores[0].\"xxx"},
		"a list's value": {head + "  - " + big + "\n", "lab.yaml:6: spec.spores[0]: want a mapping of fields, not the value \"xxx"},
		"an apiVersion":  {"apiVersion: " + big + "\nkind: Colony\nmetadata: {name: lab}\n", "lab.yaml:1: apiVersion: want \"sporectl/v1\", not \"xxx"},
		"a label":        {head + "  - id: a\n    pod:\n      labels:\n        ? " + big + "\n        : v\n", "lab.yaml:9: spec.spores[0].pod.labels[\"xxx"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Read("lab.yaml", []byte(c.yaml))
			require.Error(t, err)
			require.Less(t, len(err.Error()), 600, "%.600s", err.Error())
			require.Contains(t, err.Error(), c.field)
			require.Contains(t, err.Error(), "(31457280 bytes)")
		})
	}
}
