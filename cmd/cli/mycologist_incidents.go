package cli

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/mycelia"
	"github.com/sporectl/sporectl/reconcile/transcript"
)

// newCmdCollisions, newCmdDeploys and newCmdReport are the incidents the
// [arch] reads and the reports spores make.
func newCmdCollisions(f *Factory, co *clientOptions) *cobra.Command {
	return newWindowCmd(f, co, mycelia.RouteCollisions, func(ctx context.Context, c *mycelia.Client, win time.Duration) (Printable, error) {
		l, err := c.Collisions(ctx, win)
		return collisionList{l}, err
	})
}

func newCmdDeploys(f *Factory, co *clientOptions) *cobra.Command {
	return newWindowCmd(f, co, mycelia.RouteDeploys, func(ctx context.Context, c *mycelia.Client, win time.Duration) (Printable, error) {
		l, err := c.Deploys(ctx, win)
		return deployList{l}, err
	})
}

// newWindowCmd is an incident list of route over the --window flag's
// last stretch of time, fetched by list.
func newWindowCmd(f *Factory, co *clientOptions, route *mycelia.Route, list func(context.Context, *mycelia.Client, time.Duration) (Printable, error)) *cobra.Command {
	var win time.Duration
	cmd := &cobra.Command{
		Use:   route.Use(),
		Short: route.Short,
		Long:  route.Long,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkWindow(win); err != nil {
				return err
			}
			c, err := f.apiClient(co)
			if err != nil {
				return err
			}
			p, err := list(cmd.Context(), c, win)
			if err != nil {
				return err
			}
			return f.Print(p)
		},
	}
	windowFlag(cmd, &win)
	return cmd
}

func newCmdReport(f *Factory, co *clientOptions) *cobra.Command {
	var failed bool
	cmd := &cobra.Command{
		Use:   mycelia.RouteReport.Use(),
		Short: mycelia.RouteReport.Short,
		Long:  mycelia.RouteReport.Long,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 || (args[0] != mycelia.ReportPush && args[0] != mycelia.ReportDeploy) {
				return usageErrorf("%s takes push or deploy and the text (or - for stdin)", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := readText(cmd, args[1])
			if err != nil {
				return err
			}
			c, err := f.apiClient(co)
			if err != nil {
				return err
			}
			r, err := c.Report(cmd.Context(), args[0], failed, text)
			if err != nil {
				return err
			}
			return f.Print(reportResult{r})
		},
	}
	cmd.Flags().BoolVar(&failed, "failed", false, "it failed")
	return cmd
}

type collisionList struct{ mycelia.CollisionList }

func (l collisionList) Table(bool) ([]string, [][]string) {
	rows := [][]string{}
	for _, f := range l.Files {
		for _, e := range f.Spores {
			rows = append(rows, []string{transcript.Sanitize(f.Path), e.ID, strconv.Itoa(e.Edits), e.FirstAt.UTC().Format(time.RFC3339), e.LastAt.UTC().Format(time.RFC3339)})
		}
	}
	return []string{"FILE", "SPORE", "EDITS", "FIRST", "LAST"}, rows
}

func (l collisionList) Names() []string {
	out := make([]string, len(l.Files))
	for i, f := range l.Files {
		out[i] = "file/" + transcript.Sanitize(f.Path)
	}
	return out
}

type deployList struct{ mycelia.DeployList }

func (l deployList) Table(wide bool) ([]string, [][]string) {
	rows := [][]string{}
	for _, d := range l.Deploys {
		st := "ok"
		if d.Failed {
			st = "FAILED"
		}
		what := transcript.Sanitize(d.What)
		if r := []rune(what); !wide && len(r) > 80 {
			what = string(r[:77]) + "..."
		}
		rows = append(rows, []string{d.At.UTC().Format(time.RFC3339), d.Spore, d.Kind, st, d.Source, what})
	}
	return []string{"AT", "SPORE", "KIND", "RESULT", "SOURCE", "WHAT"}, rows
}

func (l deployList) Names() []string {
	out := make([]string, len(l.Deploys))
	for i, d := range l.Deploys {
		out[i] = "spore/" + d.Spore
	}
	return out
}

type reportResult struct{ mycelia.ReportResponse }

func (r reportResult) Table(bool) ([]string, [][]string) {
	line := fmt.Sprintf("report/%s recorded in the log of spore/%s (event %d)", r.Action, r.Spore, r.Seq)
	switch r.Summons {
	case mycelia.SummonsRaised:
		line += "; the [arch] is summoned"
	case mycelia.SummonsHeld:
		line += "; the [arch] is not summoned now (you reached your limit of summonses an hour): your next summons counts it"
	}
	return nil, [][]string{{line}}
}

func (r reportResult) Names() []string { return []string{"report/" + r.Action} }
