package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/state"
)

type repairOptions struct {
	f      *Factory
	IDs    []string
	DryRun bool
}

// newCmdRepair builds the command; runF, when not nil, is called instead
// of running it (tests of what the flags parse into).
func newCmdRepair(f *Factory, runF func(context.Context, *repairOptions) error) *cobra.Command {
	o := &repairOptions{f: f}
	cmd := &cobra.Command{
		Use:   "repair ID...",
		Short: "Set a spore's damaged stored data aside, keeping everything intact",
		Long: `Look at each spore's stored record and event log and set aside what cannot
be read, in one transaction per spore. Nothing is deleted: what is damaged is
kept where the output names it — a file under the directory store's damaged/
directory, or a row of the table sporectl.damaged on PostgreSQL (the whole
row, as JSON).

A log with damaged lines (rows) keeps every intact one as it was and, in each
damaged one's place, an event saying where it is kept (so every other event
keeps its number), then a "repaired" event. A record that cannot be read at
all is set aside whole with its log (on PostgreSQL with its outbox and token
rows too), and the spore leaves the store (create it again to go on from its
home). A spore a pass marked "store damage" has the mark cleared, so the next
pass judges it again.

With --dry-run it says what it would do and writes nothing.
See "A spore's stored data is damaged" under "Recovery" in the docs.`,
		Args: sporeIDs(-1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.IDs = args
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.run(cmd.Context())
		},
	}
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "say what would be set aside and write nothing")
	return cmd
}

func (o *repairOptions) run(ctx context.Context) error {
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	r, ok := st.(state.Repairer)
	if !ok {
		// Both stores repair; only a store wrapped without the method
		// (a test's) lands here.
		return usageErrorf("the %s store cannot repair; fix what `sporectl check` names by hand (see 'Recovery' in the docs)", st.Info().Backend)
	}
	var out repairResult
	for _, id := range o.IDs {
		rep, err := r.Repair(ctx, id, o.DryRun)
		if err != nil {
			return err
		}
		out.Spores = append(out.Spores, rep)
	}
	return o.f.Print(out)
}

type repairResult struct {
	Spores []*state.RepairReport `json:"spores"`
}

func (r repairResult) Table(bool) ([]string, [][]string) {
	h := []string{"ID", "RESULT", "DAMAGE", "KEPT", "SET-ASIDE"}
	var rows [][]string
	for _, s := range r.Spores {
		var damage []string
		for _, d := range s.Damage {
			damage = append(damage, d.Where+": "+d.Message)
		}
		result := "nothing damaged"
		switch {
		case s.Removed && s.DryRun:
			result = "would set the spore aside"
		case s.Removed:
			result = "spore set aside"
		case len(s.Damage) > 0 && s.DryRun:
			result = fmt.Sprintf("would replace %d line(s)", s.Replaced)
		case len(s.Damage) > 0:
			result = fmt.Sprintf("replaced %d line(s)", s.Replaced)
		case s.Cleared && s.DryRun:
			result = "would clear the damage mark"
		case s.Cleared:
			result = "damage mark cleared"
		}
		rows = append(rows, []string{s.ID, result, orDash(strings.Join(damage, "; ")), fmt.Sprint(s.Kept), orDash(strings.Join(s.SetAside, ", "))})
	}
	return h, rows
}

// Names: the repaired spores.
func (r repairResult) Names() []string {
	out := make([]string, 0, len(r.Spores))
	for _, s := range r.Spores {
		out = append(out, "spore/"+s.ID)
	}
	return out
}
