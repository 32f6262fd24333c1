package cli

import (
	"context"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sporectl/sporectl/bridge/sporeenv"
	"github.com/sporectl/sporectl/internal/quote"
	"github.com/sporectl/sporectl/mycelia"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/transcript"
)

// podHosts and podHostLogs show the runtime's hosts, for the [arch]
// (podCommands).
func podHosts(f *Factory, _ *pflag.FlagSet) podCommand {
	return podCommand{
		Call: func(*cobra.Command, []string) (podCall, error) {
			return func(ctx context.Context, c *mycelia.Client) (Printable, error) {
				l, err := c.Hosts(ctx)
				return hostList{HostList: l, now: f.Now()}, err
			}, nil
		},
	}
}

func podHostLogs(f *Factory, fs *pflag.FlagSet) podCommand {
	var tail int
	fs.IntVar(&tail, "tail", mycelia.DefaultHostTail, "how many of the last lines (at most "+strconv.Itoa(mycelia.MaxHostTail)+")")
	return podCommand{
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageErrorf("%s takes at most one pod name, got %d", cmd.CommandPath(), len(args))
			}
			if len(args) == 1 {
				n := args[0]
				if n == "" || len(n) > 253 || strings.ContainsAny(n, "/?#%") || !utf8.ValidString(n) || transcript.Sanitize(n) != n {
					return usageErrorf("invalid pod name %s: a name from `mycologist hosts` or a spore id", quote.Value(n))
				}
			}
			return nil
		},
		Call: func(cmd *cobra.Command, args []string) (podCall, error) {
			if tail < 1 || tail > mycelia.MaxHostTail {
				return nil, usageErrorf("invalid value %d for --tail: from 1 to %d", tail, mycelia.MaxHostTail)
			}
			name := f.Getenv(sporeenv.SporeID)
			if len(args) == 1 {
				name = args[0]
			}
			return func(ctx context.Context, c *mycelia.Client) (Printable, error) {
				r, err := c.HostLogs(ctx, name, tail)
				return hostLogs{r}, err
			}, nil
		},
	}
}

type hostList struct {
	reconcile.HostList
	now time.Time
}

func (l hostList) Table(bool) ([]string, [][]string) {
	rows := make([][]string, 0, len(l.Hosts))
	for _, h := range l.Hosts {
		cpu, mem := "-", "-"
		switch {
		case h.CPUCores != nil:
			// Millicores, rounded up, as kubectl top shows them: an idle
			// bridge reads 1m, not 0.000 cores.
			cpu = strconv.FormatInt(int64(math.Ceil(*h.CPUCores*1000)), 10) + "m"
		case h.CPUSeconds != nil:
			cpu = strconv.FormatFloat(*h.CPUSeconds, 'f', 2, 64) + "s used"
		}
		if h.MemoryBytes != nil {
			mem = bytesIEC(*h.MemoryBytes)
		}
		rows = append(rows, []string{h.Name, orDash(h.Spore), h.State, cpu, mem, strconv.Itoa(h.Restarts), age(l.now, h.Started)})
	}
	return []string{"NAME", "SPORE", "STATE", "CPU", "MEMORY", "RESTARTS", "AGE"}, rows
}

func (l hostList) Names() []string {
	out := make([]string, len(l.Hosts))
	for i, h := range l.Hosts {
		out[i] = "host/" + h.Name
	}
	return out
}

// Footer says where the figures come from.
func (l hostList) Footer() []string {
	return []string{"# " + l.Runtime + ": " + l.Metrics}
}

type hostLogs struct{ mycelia.HostLogs }

// Lines are the log's lines, after a note when earlier ones were cut.
func (l hostLogs) Lines() []string {
	var lines []string
	if l.Cut {
		lines = append(lines, "# (earlier lines cut)")
	}
	return append(lines, textLines(l.HostLogs.Text)...)
}

func (h hostLogs) Table(bool) ([]string, [][]string) { return nil, [][]string{{h.Text}} }
func (h hostLogs) Names() []string                   { return []string{"host/" + h.Name} }

// bytesIEC is n bytes in binary units, as kubectl top shows memory.
func bytesIEC(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + "B"
	}
	v, i := float64(n)/unit, 0
	for v >= unit && i < 4 {
		v /= unit
		i++
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + []string{"Ki", "Mi", "Gi", "Ti", "Pi"}[i]
}
