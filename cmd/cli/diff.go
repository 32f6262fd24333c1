package cli

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/reconcile/colonyspec"
)

type diffOptions struct {
	f     *Factory
	Files []string
	Prune bool
}

// newCmdDiff builds the command; runF, when not nil, is called instead of
// running it (tests of what the flags parse into).
func newCmdDiff(f *Factory, runF func(context.Context, *diffOptions) error) *cobra.Command {
	o := &diffOptions{f: f}
	cmd := &cobra.Command{
		Use:   "diff -f FILE|DIR|-",
		Short: "Show what apply -f would change; exit 1 when it would change something",
		Long: `Compare Colony documents with the store and print, for every spore that
'apply' would create, configure or (with --prune) prune, each field that would
change. It writes nothing. Exit 0: nothing differs; 1: something does (kubectl
diff's convention); any other code: diff itself failed (see "Exit codes" in the docs).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.run(cmd.Context())
		},
	}
	cmd.Flags().StringArrayVarP(&o.Files, "filename", "f", nil, "a Colony file, a directory of them, or - for stdin (repeatable)")
	cmd.Flags().BoolVar(&o.Prune, "prune", false, "also show the spores apply --prune would delete")
	return cmd
}

func (o *diffOptions) run(ctx context.Context) error {
	docs, err := readColonies(o.f.IO.In, o.Files)
	if err != nil {
		return err
	}
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	p, err := planColonies(ctx, st, docs, colonyspec.Options{Prune: o.Prune})
	if err != nil {
		return err
	}
	out := diffList{Changes: []diffChange{}}
	for _, c := range p.Changes {
		if c.Action != colonyspec.Unchanged {
			out.Changes = append(out.Changes, diffChange{Kind: c.Kind(), ID: c.Name(), Colony: c.Colony, Action: string(c.Action), Diffs: c.Diffs})
		}
	}
	if err := o.f.Print(out); err != nil {
		return err
	}
	if len(out.Changes) > 0 {
		return &DiffersError{Changes: len(out.Changes)}
	}
	return nil
}

// diffList is what diff prints: `-o json` {"changes": [...]}, each with
// the fields that change.
type diffList struct {
	Changes []diffChange `json:"changes"`
}

type diffChange struct {
	Kind   string            `json:"kind"`
	ID     string            `json:"id"`
	Colony string            `json:"colony"`
	Action string            `json:"action"`
	Diffs  []colonyspec.Diff `json:"diffs,omitempty"`
}

// Lines is the table form: "spore/x configured (colony lab)", then one
// line per field, "  resources.cpu: 1 → 2" ("+" for a new spore's).
func (l diffList) Lines() []string {
	var lines []string
	for _, c := range l.Changes {
		if c.Kind == "colony" {
			lines = append(lines, "colony/"+c.ID+" "+c.Action)
		} else {
			lines = append(lines, "spore/"+c.ID+" "+c.Action+" (colony "+c.Colony+")")
		}
		for _, d := range c.Diffs {
			if c.Action == string(colonyspec.Created) {
				lines = append(lines, "  + "+d.Field+": "+d.To)
				continue
			}
			lines = append(lines, "  ~ "+d.Field+": "+orNone(d.From)+" → "+orNone(d.To))
		}
	}
	return lines
}

func (l diffList) Table(bool) ([]string, [][]string) { return nil, nil }

func (l diffList) Names() []string {
	out := make([]string, len(l.Changes))
	for i, c := range l.Changes {
		out[i] = c.Kind + "/" + c.ID
	}
	return out
}

// orNone shows an empty value in a diff.
func orNone(v string) string {
	if v == "" {
		return "(none)"
	}
	return v
}
