package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/mycelia"
)

// newCmdMycoSpores lists who is in reach; newCmdMycoSpore shows one
// spore's turns.
func newCmdMycoSpores(f *Factory, co *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   mycelia.RouteSpores.Use(),
		Short: mycelia.RouteSpores.Short,
		Long:  mycelia.RouteSpores.Long,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.apiClient(co)
			if err != nil {
				return err
			}
			l, err := c.Spores(cmd.Context())
			if err != nil {
				return err
			}
			return f.Print(mycoSporeList{SporeList: l, now: f.Now()})
		},
	}
}

func newCmdMycoSpore(f *Factory, co *clientOptions) *cobra.Command {
	var turns int
	cmd := &cobra.Command{
		Use:   mycelia.RouteSpore.Use(),
		Short: mycelia.RouteSpore.Short,
		Long:  mycelia.RouteSpore.Long,
		Args:  sporeIDs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if turns < 1 || turns > mycelia.MaxTurns {
				return usageErrorf("invalid value %d for --turns: from 1 to %d", turns, mycelia.MaxTurns)
			}
			c, err := f.apiClient(co)
			if err != nil {
				return err
			}
			r, err := c.Spore(cmd.Context(), args[0], turns)
			if err != nil {
				return err
			}
			return f.Print(sporeTurns{r})
		},
	}
	cmd.Flags().IntVar(&turns, "turns", mycelia.DefaultTurns, "how many of the last turns (a prompt or message and what followed)")
	return cmd
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
