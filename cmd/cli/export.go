package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/reconcile/colonyspec"
	"github.com/sporectl/sporectl/state"
)

type exportOptions struct {
	f      *Factory
	Colony string
}

// newCmdExport builds the command; runF, when not nil, is called instead of
// running it (tests of what the flags parse into).
func newCmdExport(f *Factory, runF func(context.Context, *exportOptions) error) *cobra.Command {
	o := &exportOptions{f: f}
	cmd := &cobra.Command{
		Use:   "export COLONY",
		Short: "Print a colony as a Colony document that apply -f takes back unchanged",
		Long: `Print the stored spores of COLONY as one Colony document (see "A declarative colony" in the docs),
every field each spore has, in YAML unless -o says otherwise (-o json is a
document apply takes too). Applied to the same store it changes nothing.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("%s takes one colony name, got %d argument(s)", cmd.CommandPath(), len(args))
			}
			return state.ValidateName("colony", args[0])
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Colony = args[0]
			if !cmd.Flags().Changed("output") {
				f.Global.Output = "yaml"
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.run(cmd.Context())
		},
	}
	return cmd
}

func (o *exportOptions) run(ctx context.Context) error {
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	var spores []state.Spore
	var settings state.Settings
	err = st.View(ctx, func(tx state.Tx) error {
		var err error
		if settings, err = tx.Settings(ctx); err != nil {
			return err
		}
		spores, err = tx.Spores(ctx)
		return err
	})
	if err != nil {
		return err
	}
	d := colonyspec.Export(o.Colony, spores, settings)
	if len(d.Spec.Spores) == 0 {
		return fmt.Errorf("colony %s: no spore of the store is in it: %w", o.Colony, state.ErrNotFound)
	}
	return o.f.Print(colonyDoc{d})
}

// colonyDoc prints a Colony document: the document itself for -o yaml
// and json, its spores for a table.
type colonyDoc struct{ colonyspec.Document }

func (c colonyDoc) Table(wide bool) ([]string, [][]string) {
	h := []string{"ID", "RANK", "SWARM", "ROLE", "DESIRED"}
	if wide {
		h = append(h, "IMAGE", "CPU", "MEMORY", "STORAGE", "LOOP")
	}
	val := func(p *string) string {
		if p == nil {
			return "-"
		}
		return orDash(*p)
	}
	var rows [][]string
	for _, s := range c.Spec.Spores {
		r := []string{s.ID, val(s.Rank), val(s.Swarm), val(s.Role), val(s.Desired)}
		if wide {
			res := s.Resources
			if res == nil {
				res = &colonyspec.Resources{}
			}
			r = append(r, val(s.Image), val(res.CPU), val(res.Memory), val(res.Storage), val(s.Loop))
		}
		rows = append(rows, r)
	}
	return h, rows
}

func (c colonyDoc) Names() []string { return []string{"colony/" + c.Metadata.Name} }
