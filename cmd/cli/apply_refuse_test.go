package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const colonyHead = "apiVersion: sporectl/v1\nkind: Colony\nmetadata: {name: lab}\nspec:\n  spores:\n"

// TestApplyRefusesAndAppliesNothing: a fault in any file or document, of
// the file's own (exit 2) or against the store (exit 5), names the file,
// line and field, and nothing of any document is applied.
func TestApplyRefusesAndAppliesNothing(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string // in a directory given to -f; one file: given itself
		stdin string
		args  []string // after apply; -f added when files are given
		code  int
		msg   string
	}{
		{name: "not YAML", files: map[string]string{"new.yaml": colonyHead + "  - id: new-1\n    rank: spore: x\n"},
			code: ExitUsage, msg: "new.yaml:7: not valid YAML: mapping values are not allowed in this context"},
		{name: "an unknown field", files: map[string]string{"new.yaml": colonyHead + "  - id: new-1\n    quota: 10\n"},
			code: ExitUsage, msg: `new.yaml:7: spec.spores[0].quota: unknown field "quota"`},
		{name: "a bad value", files: map[string]string{"new.yaml": colonyHead + "  - id: new-1\n    resources: {memory: lots}\n"},
			code: ExitUsage, msg: `new.yaml:7: spec.spores[0].resources.memory: invalid value "lots": want a Kubernetes quantity`},
		{name: "two documents, the second bad", files: map[string]string{"new.yaml": colonyHead + "  - id: new-1\n---\n" +
			strings.Replace(colonyHead, "lab", "ops", 1) + "  - id: new-2\n    desired: Asleep\n"},
			code: ExitUsage, msg: `new.yaml:14: spec.spores[0].desired: invalid value "Asleep": want one of Running, Paused, Stopped`},
		{name: "two files, one bad", files: map[string]string{"a.yaml": colonyHead + "  - id: new-1\n", "b.yml": strings.Replace(colonyHead, "lab", "ops", 1) + "  - id: new-2\n    rank: king\n"},
			code: ExitUsage, msg: `b.yml:7: spec.spores[0].rank: invalid value "king"`},
		{name: "stdin", stdin: colonyHead + "  - id: new-1\n    role: dev\n", args: []string{"-f", "-"},
			code: ExitUsage, msg: "<stdin>:7: spec.spores[0].role: role dev needs a swarm"},
		{name: "a rank changed", files: map[string]string{"new.yaml": colonyHead + "  - id: new-1\n  - id: red-1\n    rank: colony\n"},
			code: ExitUsage, msg: "new.yaml:8: spec.spores[1].rank: spore red-1 has rank spore, not colony: a rank is fixed when the spore is created"},
		{name: "a spore of another colony", files: map[string]string{"new.yaml": strings.Replace(colonyHead, "lab", "ops", 1) + "  - id: new-1\n  - id: red-1\n"},
			code: ExitConflict, msg: "new.yaml:7: spec.spores[1].id: spore red-1 is in colony lab, not ops: apply does not move a spore between colonies"},
		{name: "a rank that must be single, taken", files: map[string]string{"new.yaml": colonyHead + "  - id: new-1\n  - id: new-myco\n    rank: colony\n"},
			code: ExitConflict, msg: "new.yaml:7: spec.spores[1]: spore lab-myco is already colony lab's mycologist"},
		{name: "aliases that expand too far", files: map[string]string{"lol.yaml": laughs(1000)},
			code: ExitUsage, msg: "its aliases expand the document past"},
		{name: "no such file", args: []string{"-f", "nowhere.yaml"}, code: ExitUsage, msg: "-f nowhere.yaml: no such file or directory"},
		{name: "no -f", args: []string{}, code: ExitUsage, msg: "-f is required"},
		{name: "nothing in it", files: map[string]string{"new.yaml": "# nothing\n"}, code: ExitUsage, msg: "no Colony documents"},
		{name: "--purge-home without --prune", files: map[string]string{"new.yaml": colonyHead}, args: []string{"--purge-home"},
			code: ExitUsage, msg: "--purge-home needs --prune"},
	}
	eachStore(t, func(t *testing.T, r *applyRig) {
		r.ok("", "apply", "-f", r.file("lab.yaml", labColony))
		exported := r.ok("", "export", "lab")
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				args := append([]string{"apply"}, tt.args...)
				if len(tt.files) > 0 {
					dir := r.file(tt.name+"/.keep", "")
					for name, content := range tt.files {
						r.file(tt.name+"/"+name, content)
					}
					if len(tt.files) == 1 {
						for name := range tt.files {
							args = append(args, "-f", dir[:len(dir)-len(".keep")]+name)
						}
					} else {
						args = append(args, "-f", dir[:len(dir)-len("/.keep")])
					}
				}
				for _, verb := range []string{"apply", "diff"} {
					args[0] = verb
					if verb == "diff" && tt.name == "--purge-home without --prune" {
						continue
					}
					res := r.run(tt.stdin, args...)
					require.Equal(t, tt.code, res.code, "%s: %s", verb, res.err)
					require.Contains(t, res.err, tt.msg, verb)
					require.Empty(t, res.out, "%s: nothing printed as done", verb)
				}
				require.Equal(t, exported, r.ok("", "export", "lab"), "nothing applied")
				require.Equal(t, 4, r.run("", "export", "ops").code, "nothing applied to the other colony")
				require.Equal(t, 4, r.run("", "events", "new-1").code, "nothing created")
			})
		}
	})
}

// laughs is a "billion laughs" Colony: n spores, each an alias of one
// spore whose pod's labels and annotations alias a mapping of n entries.
func laughs(n int) string {
	var b strings.Builder
	b.WriteString(colonyHead[:len(colonyHead)-len("  spores:\n")] + "  pod:\n    labels: &l\n")
	for i := range n {
		fmt.Fprintf(&b, "      k%d: v\n", i)
	}
	b.WriteString("  spores:\n  - &s {id: new-1, pod: {labels: *l, annotations: *l}}\n")
	for range n {
		b.WriteString("  - *s\n")
	}
	return b.String()
}
