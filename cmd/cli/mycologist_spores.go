package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sporectl/sporectl/mycelia"
)

// podSpores lists who is in reach; podSpore shows one spore's turns
// (podCommands).
func podSpores(f *Factory, _ *pflag.FlagSet) podCommand {
	return podCommand{
		Call: func(*cobra.Command, []string) (podCall, error) {
			return func(ctx context.Context, c *mycelia.Client) (Printable, error) {
				l, err := c.Spores(ctx)
				return mycoSporeList{SporeList: l, now: f.Now()}, err
			}, nil
		},
	}
}

func podSpore(_ *Factory, fs *pflag.FlagSet) podCommand {
	var turns int
	fs.IntVar(&turns, "turns", mycelia.DefaultTurns, "how many of the last turns (a prompt or message and what followed)")
	return podCommand{
		Args: sporeIDs(1),
		Call: func(cmd *cobra.Command, args []string) (podCall, error) {
			if turns < 1 || turns > mycelia.MaxTurns {
				return nil, usageErrorf("invalid value %d for --turns: from 1 to %d", turns, mycelia.MaxTurns)
			}
			return func(ctx context.Context, c *mycelia.Client) (Printable, error) {
				r, err := c.Spore(ctx, args[0], turns)
				return sporeTurns{r}, err
			}, nil
		},
	}
}

// Lines are the turns as the agent reads them: a header line, then the
// conversation's lines. The server renders them safely; the printer
// sanitizes each line again, since the text came over the network.
func (t sporeTurns) Lines() []string {
	r := t.SporeTurns
	lines := []string{fmt.Sprintf("# spore/%s, %s (%s), %d turn(s), events %d–%d", r.ID, r.Effective, r.Desired, r.Turns, r.FirstSeq, r.LastSeq)}
	if r.Cut {
		lines = append(lines, "# (earlier lines cut)")
	}
	return append(lines, textLines(r.Text)...)
}

// textLines splits text into its lines (none for no text).
func textLines(text string) []string {
	if text == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}

type mycoSporeList struct {
	mycelia.SporeList
	now time.Time
}

func (l mycoSporeList) Table(wide bool) ([]string, [][]string) {
	h := []string{"ID", "COLONY", "RANK", "SWARM", "ROLE", "DESIRED", "EFFECTIVE", "ACTIVITY", "LAST-ACTIVITY"}
	if wide {
		h = append(h, "REASON", "PENDING", "LAST-SEQ")
	}
	rows := make([][]string, 0, len(l.Spores))
	for _, s := range l.Spores {
		r := []string{s.ID, s.Colony, s.Rank, orDash(s.Swarm), orDash(s.Role), s.Desired, s.Effective, orDash(s.Activity), age(l.now, s.LastEventAt)}
		if wide {
			r = append(r, orDash(s.Reason), strconv.Itoa(s.Pending), strconv.FormatUint(s.LastSeq, 10))
		}
		rows = append(rows, r)
	}
	return h, rows
}

func (l mycoSporeList) Names() []string {
	out := make([]string, len(l.Spores))
	for i, s := range l.Spores {
		out[i] = "spore/" + s.ID
	}
	return out
}

type sporeTurns struct{ mycelia.SporeTurns }

func (t sporeTurns) Table(bool) ([]string, [][]string) { return nil, [][]string{{t.Text}} }
func (t sporeTurns) Names() []string                   { return []string{"spore/" + t.ID} }
