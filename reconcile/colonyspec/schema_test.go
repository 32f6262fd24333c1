package colonyspec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/sporectl/sporectl/state"
)

// The JSON Schema of the format (docs/colony.schema.json) against the
// examples of docs/apply.md, export's output and the Go types, with a
// validator of the keywords the schema uses (no network, no library).

func loadSchema(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "colony.schema.json"))
	require.NoError(t, err)
	var s map[string]any
	require.NoError(t, json.Unmarshal(b, &s))
	return s
}

// docExamples are the yaml blocks of docs/apply.md (faults are shown as
// text blocks).
func docExamples(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "apply.md"))
	require.NoError(t, err)
	var out []string
	for _, part := range strings.Split(string(b), "```yaml\n")[1:] {
		block, _, ok := strings.Cut(part, "```")
		require.True(t, ok, "an unclosed yaml block in docs/apply.md")
		out = append(out, block)
	}
	require.NotEmpty(t, out, "docs/apply.md has examples")
	return out
}

func TestSchemaAcceptsTheExamplesAndExport(t *testing.T) {
	schema := loadSchema(t)
	for i, ex := range docExamples(t) {
		_, err := Read("apply.md", []byte(ex))
		require.NoError(t, err, "example %d of docs/apply.md is a valid file", i)
		dec := yaml.NewDecoder(strings.NewReader(ex))
		for {
			var v any
			if err := dec.Decode(&v); errors.Is(err, io.EOF) {
				break
			} else {
				require.NoError(t, err)
			}
			require.NoError(t, validate(schema, schema, v, ""), "example %d of docs/apply.md", i)
		}
	}
	d := Export("lab", []state.Spore{
		{Wish: state.Wish{ID: "lab-myco", Colony: "lab", Rank: state.RankColony, Desired: state.Running, Spec: spec}},
		{Wish: state.Wish{ID: "red-lead", Colony: "lab", Rank: state.RankSwarm, Swarm: "red", Desired: state.Paused, Spec: spec, Loop: state.Duration(90 * time.Minute)}},
		{Wish: state.Wish{ID: "red-1", Colony: "lab", Rank: state.RankSpore, Swarm: "red", Role: "dev", Desired: state.Stopped, Spec: state.Spec{CPU: "500m"}, SleepAfter: state.Duration(45 * time.Minute)}},
		{Wish: state.Wish{ID: "red-2", Colony: "lab", Rank: state.RankSpore, Desired: state.Paused, Spec: state.Spec{Pod: &state.PodOptions{
			RuntimeClassName: "gvisor", NodeSelector: map[string]string{"pool": "agents"}, EnvFromSecrets: []string{"red-keys"},
			Tolerations: []state.Toleration{{Key: "agents", Operator: "Exists", Effect: "NoExecute", TolerationSeconds: ptr(int64(30))}},
			Annotations: map[string]string{"example.com/owner": "red"}}}}},
	}, state.Settings{}.WithColony("lab", state.ColonySettings{SleepAfter: state.Duration(30 * time.Minute), WakeOnMessage: true,
		Budget: state.Budget{TokensPerDay: 100000, CostPerDayMicros: 2_500_000}, Pod: &state.PodOptions{Labels: map[string]string{"team": "lab"}}}))
	b, err := json.Marshal(d)
	require.NoError(t, err)
	var v any
	require.NoError(t, json.Unmarshal(b, &v))
	require.NoError(t, validate(schema, schema, v, ""), "export's output: %s", b)
	_, err = Read("export.json", b)
	require.NoError(t, err, "and apply reads it")
}

// TestSchemaRefusesWhatReadRefuses: the shapes the schema can say are
// refused by both.
func TestSchemaRefusesWhatReadRefuses(t *testing.T) {
	schema := loadSchema(t)
	head := "apiVersion: sporectl/v1\nkind: Colony\nmetadata: {name: lab}\nspec:\n  spores:\n"
	for _, bad := range []string{
		head + "  - {id: a, budget: 1}\n",
		head + "  - {id: a, desired: running}\n",
		head + "  - {id: a, rank: king}\n",
		head + "  - {id: A}\n",
		head + "  - {rank: spore}\n",
		head + "  - {id: a, resources: {cpu: lots}}\n",
		head + "  - {id: a, loop: soon}\n",
		head + "  - {id: a, pod: {runtimeClassName: \"\"}}\n",
		head + "  - {id: a, pod: {tolerations: [{effect: Sometimes}]}}\n",
		head + "  - {id: a, pod: {nodeSelector: [a]}}\n",
		head + "  - {id: a, pod: {nodeSelector: {a: {b: c}}}}\n",
		head + "  - {id: a, pod: {tolerations: [{key: a, tolerationSeconds: soon}]}}\n",
		head + "  - {id: a, pod: {sandbox: gvisor}}\n",
		"apiVersion: sporectl/v1\nkind: Colony\nmetadata: {name: lab}\nspec: {budget: {tokensPerDay: -1}}\n",
		"apiVersion: v1\nkind: Colony\nmetadata: {name: lab}\n",
		"apiVersion: sporectl/v1\nkind: Colony\nmetadata: {name: lab}\nstatus: {}\n",
	} {
		_, err := Read("bad.yaml", []byte(bad))
		require.Error(t, err, bad)
		var v any
		require.NoError(t, yaml.Unmarshal([]byte(bad), &v))
		require.Error(t, validate(schema, schema, v, ""), "the schema refuses:\n%s", bad)
	}
}

// TestSchemaNamesEveryField: the schema's properties are the Go types'
// fields, so a field added to one is added to the other.
func TestSchemaNamesEveryField(t *testing.T) {
	schema := loadSchema(t)
	defs := schema["$defs"].(map[string]any)
	props := func(node any) []string {
		var names []string
		for k := range node.(map[string]any)["properties"].(map[string]any) {
			names = append(names, k)
		}
		sort.Strings(names)
		return names
	}
	goNames := func(v any) []string {
		_, names := fieldsOf(reflect.TypeOf(v))
		sort.Strings(names)
		return names
	}
	root := schema["properties"].(map[string]any)
	require.Equal(t, goNames(Document{}), props(schema))
	require.Equal(t, goNames(Metadata{}), props(root["metadata"]))
	require.Equal(t, goNames(ColonySpec{}), props(root["spec"]))
	require.Equal(t, goNames(Fields{}), props(defs["fields"]))
	require.Equal(t, goNames(Resources{}), props(defs["fields"].(map[string]any)["properties"].(map[string]any)["resources"]))
	require.Equal(t, goNames(Spore{}), props(defs["spore"]))
	require.Equal(t, goNames(Pod{}), props(defs["pod"]))
	require.Equal(t, goNames(Toleration{}), props(defs["toleration"]))
	require.Equal(t, goNames(Schedule{}), props(defs["schedule"]))
}

// validate checks v against the schema node s (within root, for $ref):
// the keywords docs/colony.schema.json uses, and a failure for any other
// (so the schema cannot grow a keyword this check ignores).
func validate(root, s map[string]any, v any, at string) error {
	known := []string{"$schema", "$id", "title", "description", "$defs", "$ref", "type", "const", "enum", "required", "properties", "additionalProperties", "items", "pattern", "minLength", "maxLength"}
	for k := range s {
		if !slices.Contains(known, k) {
			return fmt.Errorf("%s: the schema uses %q, which this check does not know", at, k)
		}
	}
	if ref, ok := s["$ref"].(string); ok {
		node := any(root)
		for _, p := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			node = node.(map[string]any)[p]
		}
		if err := validate(root, node.(map[string]any), v, at); err != nil {
			return err
		}
	}
	if t, ok := s["type"]; ok {
		types := []string{}
		switch t := t.(type) {
		case string:
			types = append(types, t)
		case []any:
			for _, x := range t {
				types = append(types, x.(string))
			}
		}
		if !slices.Contains(types, typeOf(v)) {
			return fmt.Errorf("%s: want %v, not %s", at, types, typeOf(v))
		}
	}
	if c, ok := s["const"]; ok && !reflect.DeepEqual(c, v) {
		return fmt.Errorf("%s: want %v", at, c)
	}
	if e, ok := s["enum"].([]any); ok && !slices.ContainsFunc(e, func(x any) bool { return reflect.DeepEqual(x, v) }) {
		return fmt.Errorf("%s: %v is not one of %v", at, v, e)
	}
	if str, ok := v.(string); ok {
		if p, ok := s["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(str) {
			return fmt.Errorf("%s: %q does not match %s", at, str, p)
		}
		if n, ok := s["minLength"].(float64); ok && len([]rune(str)) < int(n) {
			return fmt.Errorf("%s: shorter than %v", at, n)
		}
		if n, ok := s["maxLength"].(float64); ok && len([]rune(str)) > int(n) {
			return fmt.Errorf("%s: longer than %v", at, n)
		}
	}
	if m, ok := v.(map[string]any); ok {
		for _, r := range asList(s["required"]) {
			if _, ok := m[r.(string)]; !ok {
				return fmt.Errorf("%s: %s is required", at, r)
			}
		}
		props, _ := s["properties"].(map[string]any)
		for k, x := range m {
			p, ok := props[k]
			if !ok {
				switch ap := s["additionalProperties"].(type) {
				case bool:
					if !ap {
						return fmt.Errorf("%s: %s is not a property", at, k)
					}
				case map[string]any:
					if err := validate(root, ap, x, at+"."+k); err != nil {
						return err
					}
				}
				continue
			}
			if err := validate(root, p.(map[string]any), x, at+"."+k); err != nil {
				return err
			}
		}
	}
	if l, ok := v.([]any); ok {
		if items, ok := s["items"].(map[string]any); ok {
			for i, x := range l {
				if err := validate(root, items, x, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// typeOf is v's JSON Schema type, for values decoded from JSON or YAML.
func typeOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case int, int64, uint64, float64, json.Number:
		return "number"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}
