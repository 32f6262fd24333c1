package cli

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sporectl/sporectl/mycelia"
	"github.com/sporectl/sporectl/reconcile/transcript"
)

// podCollisions, podDeploys and podReport are the incidents the [arch]
// reads and the reports spores make (podCommands).
func podCollisions(_ *Factory, fs *pflag.FlagSet) podCommand {
	return podWindow(fs, func(ctx context.Context, c *mycelia.Client, win time.Duration) (Printable, error) {
		l, err := c.Collisions(ctx, win)
		return collisionList{l}, err
	})
}

func podDeploys(_ *Factory, fs *pflag.FlagSet) podCommand {
	return podWindow(fs, func(ctx context.Context, c *mycelia.Client, win time.Duration) (Printable, error) {
		l, err := c.Deploys(ctx, win)
		return deployList{l}, err
	})
}

// podWindow is an incident list over the --window flag's last stretch of
// time, fetched by list.
func podWindow(fs *pflag.FlagSet, list func(context.Context, *mycelia.Client, time.Duration) (Printable, error)) podCommand {
	var win time.Duration
	windowFlag(fs, &win)
	return podCommand{
		Call: func(*cobra.Command, []string) (podCall, error) {
			if err := checkWindow(win); err != nil {
				return nil, err
			}
			return func(ctx context.Context, c *mycelia.Client) (Printable, error) { return list(ctx, c, win) }, nil
		},
	}
}

func podReport(_ *Factory, fs *pflag.FlagSet) podCommand {
	var failed bool
	fs.BoolVar(&failed, "failed", false, "it failed")
	return podCommand{
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 || (args[0] != mycelia.ReportPush && args[0] != mycelia.ReportDeploy) {
				return usageErrorf("%s takes push or deploy and the text (or - for stdin)", cmd.CommandPath())
			}
			return nil
		},
		Call: func(cmd *cobra.Command, args []string) (podCall, error) {
			text, err := readText(cmd, args[1])
			if err != nil {
				return nil, err
			}
			return func(ctx context.Context, c *mycelia.Client) (Printable, error) {
				r, err := c.Report(ctx, args[0], failed, text)
				return reportResult{r}, err
			}, nil
		},
	}
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
