package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/state"
)

type checkOptions struct{ f *Factory }

// newCmdCheck builds the command; runF, when not nil, is called instead of
// running it (tests of what the flags parse into).
func newCmdCheck(f *Factory, runF func(context.Context, *checkOptions) error) *cobra.Command {
	o := &checkOptions{f: f}
	return &cobra.Command{
		Use:   "check",
		Short: "Verify every invariant of the store (read-only)",
		Long: `Read the whole store and verify every invariant of its format. Nothing is
written. Exits 0 when the store is sound, 7 when a problem is found (each named
with its file and line). Notes are states the format allows, such as the
uncommitted tail a crash leaves, which the next writer clears.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.run(cmd.Context())
		},
	}
}

func (o *checkOptions) run(ctx context.Context) error {
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	rep, err := st.Check(ctx)
	if err != nil {
		return err
	}
	if err := o.f.Print(checkResult{Store: st.Info(), Report: rep}); err != nil {
		return err
	}
	if !rep.OK() {
		return &state.CorruptError{File: st.Info().Location, Offset: -1, Reason: fmt.Sprintf("check found %d problem(s)", len(rep.Problems))}
	}
	return nil
}

type checkResult struct {
	Store  state.Info `json:"store"`
	Report *state.CheckReport
}

func (c checkResult) MarshalJSON() ([]byte, error) {
	type out struct {
		Store    state.Info      `json:"store"`
		OK       bool            `json:"ok"`
		Spores   int             `json:"spores"`
		Events   uint64          `json:"events"`
		Problems []state.Problem `json:"problems"`
		Notes    []state.Problem `json:"notes"`
	}
	return json.Marshal(out{c.Store, c.Report.OK(), c.Report.Spores, c.Report.Events, c.Report.Problems, c.Report.Notes})
}

func (c checkResult) Table(bool) ([]string, [][]string) {
	h := []string{"SEVERITY", "WHERE", "MESSAGE"}
	var rows [][]string
	for _, p := range c.Report.Problems {
		rows = append(rows, []string{"problem", p.Where, p.Message})
	}
	for _, n := range c.Report.Notes {
		rows = append(rows, []string{"note", n.Where, n.Message})
	}
	verdict := "ok"
	if !c.Report.OK() {
		verdict = fmt.Sprintf("%d problem(s)", len(c.Report.Problems))
	}
	rows = append(rows, []string{"summary", c.Store.Location, fmt.Sprintf("%s: %d spores, %d events checked", verdict, c.Report.Spores, c.Report.Events)})
	return h, rows
}

// Names: a store's name is its location (see actionResult.name).
func (c checkResult) Names() []string { return []string{c.Store.Location} }
