package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/sporeenv"
	"github.com/sporectl/sporectl/mycelia"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/transcript"
)

// The commands a spore runs inside its pod: clients of `serve`, reading
// the environment contract of docs/mycologists.md. They never open a
// store.

// programArgs turns the process's argv into sporectl's arguments: run
// as "mycologist" or "swarm" (a link to the binary on a spore's PATH),
// the program name is the command.
func programArgs(argv []string) []string {
	if len(argv) == 0 {
		return nil
	}
	switch name := filepath.Base(argv[0]); name {
	case "mycologist", "swarm":
		return append([]string{name}, argv[1:]...)
	}
	return argv[1:]
}

// clientOptions are what every client command shares.
type clientOptions struct {
	RetryFor time.Duration
}

func (c *clientOptions) addFlags(cmd *cobra.Command) {
	cmd.PersistentFlags().DurationVar(&c.RetryFor, "retry-for", mycelia.DefaultRetryFor, "how long to retry while serve cannot be reached or answer (a message is sent once however often it is retried)")
}

// apiClient is the client of serve for this spore, from the environment.
func (f *Factory) apiClient(c *clientOptions) (*mycelia.Client, error) {
	cfg, err := mycelia.ConfigFromEnv(f.Getenv)
	if err != nil {
		return nil, err
	}
	cfg.RetryFor = c.RetryFor
	if cfg.RetryFor == 0 {
		cfg.RetryFor = -1
	}
	return mycelia.NewClient(cfg)
}

const clientEnvHelp = `It reads SPORECTL_API_URL (serve's address), SPORECTL_SPORE_ID (this spore)
and the token from SPORECTL_API_TOKEN, else from $HOME/.sporectl-bridge/api-token
(docs/mycologists.md). Run inside a spore, also as "mycologist" / "swarm".`

func newCmdMycologist(f *Factory) *cobra.Command {
	co := &clientOptions{}
	cmd := &cobra.Command{
		Use:   "mycologist",
		Short: "Talk to the mycologists from inside a spore: " + verbs("mycologist"),
		Long: `Commands a spore runs inside its pod, as clients of sporectl serve. Rank and
reach come from the store, never from the caller: a spore may only ask; a
mycologist may also list, read and tell the spores below it in its reach.

` + clientEnvHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	co.addFlags(cmd)
	cmd.AddCommand(newCmdAsk(f, co, nil), newCmdMycoSpores(f, co), newCmdMycoSpore(f, co), newCmdTell(f, co, nil),
		newCmdCollisions(f, co), newCmdDeploys(f, co), newCmdReport(f, co), newCmdHosts(f, co), newCmdHostLogs(f, co))
	return cmd
}

// verbs lists the commands of group ("mycologist") in the API's rows,
// in their order.
func verbs(group string) string {
	var v []string
	for _, rt := range mycelia.Routes {
		if g, verb, ok := strings.Cut(rt.Command, " "); ok && g == group {
			v = append(v, verb)
		}
	}
	return strings.Join(v, ", ")
}

type askOptions struct {
	f    *Factory
	co   *clientOptions
	Text string
}

func newCmdAsk(f *Factory, co *clientOptions, runF func(context.Context, *askOptions) error) *cobra.Command {
	o := &askOptions{f: f, co: co}
	return &cobra.Command{
		Use:   mycelia.RouteSummons.Use(),
		Short: mycelia.RouteSummons.Short,
		Long:  mycelia.RouteSummons.Long,
		Args:  exactText(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := readText(cmd, args[0])
			if err != nil {
				return err
			}
			o.Text = text
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			c, err := f.apiClient(o.co)
			if err != nil {
				return err
			}
			r, err := c.Ask(cmd.Context(), o.Text)
			if err != nil {
				return err
			}
			return f.Print(sendResult{r})
		},
	}
}

type tellOptions struct {
	f     *Factory
	co    *clientOptions
	ID    string
	Text  string
	Wake  bool
	Force bool
}

func newCmdTell(f *Factory, co *clientOptions, runF func(context.Context, *tellOptions) error) *cobra.Command {
	o := &tellOptions{f: f, co: co}
	cmd := &cobra.Command{
		Use:   mycelia.RouteTell.Use(),
		Short: mycelia.RouteTell.Short,
		Long:  mycelia.RouteTell.Long,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageErrorf("%s takes a spore id and the text (or - for stdin), got %d argument(s)", cmd.CommandPath(), len(args))
			}
			return sporeIDs(1)(cmd, args[:1])
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			text, err := readText(cmd, args[1])
			if err != nil {
				return err
			}
			o.ID, o.Text = args[0], text
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			c, err := f.apiClient(o.co)
			if err != nil {
				return err
			}
			r, err := c.Tell(cmd.Context(), o.ID, o.Text, o.Wake, o.Force)
			if err != nil {
				return err
			}
			return f.Print(sendResult{r})
		},
	}
	cmd.Flags().BoolVar(&o.Wake, "wake", false, "wake a sleeping spore to deliver it")
	cmd.Flags().BoolVar(&o.Force, "force", false, "skip the address check (the message is meant for ID even if it looks meant for another spore)")
	return cmd
}

func windowFlag(cmd *cobra.Command, d *time.Duration) {
	cmd.Flags().DurationVar(d, "window", mycelia.DefaultWindow, "how far back to look (at most "+mycelia.MaxWindow.String()+")")
}

func checkWindow(d time.Duration) error {
	if d <= 0 || d > mycelia.MaxWindow {
		return usageErrorf("invalid value %s for --window: more than 0 and at most %s", d, mycelia.MaxWindow)
	}
	return nil
}

func newCmdCollisions(f *Factory, co *clientOptions) *cobra.Command {
	var win time.Duration
	cmd := &cobra.Command{
		Use:   mycelia.RouteCollisions.Use(),
		Short: mycelia.RouteCollisions.Short,
		Long:  mycelia.RouteCollisions.Long,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkWindow(win); err != nil {
				return err
			}
			c, err := f.apiClient(co)
			if err != nil {
				return err
			}
			l, err := c.Collisions(cmd.Context(), win)
			if err != nil {
				return err
			}
			return f.Print(collisionList{l})
		},
	}
	windowFlag(cmd, &win)
	return cmd
}

func newCmdDeploys(f *Factory, co *clientOptions) *cobra.Command {
	var win time.Duration
	cmd := &cobra.Command{
		Use:   mycelia.RouteDeploys.Use(),
		Short: mycelia.RouteDeploys.Short,
		Long:  mycelia.RouteDeploys.Long,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkWindow(win); err != nil {
				return err
			}
			c, err := f.apiClient(co)
			if err != nil {
				return err
			}
			l, err := c.Deploys(cmd.Context(), win)
			if err != nil {
				return err
			}
			return f.Print(deployList{l})
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
	return nil, [][]string{{fmt.Sprintf("report/%s recorded in the log of spore/%s (event %d)", r.Action, r.Spore, r.Seq)}}
}

func (r reportResult) Names() []string { return []string{"report/" + r.Action} }

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

// writeTurns prints a spore's turns as text. The server renders them
// safely; each line is sanitized again here, since the text came over
// the network.
// Lines are the turns as the agent reads them: a header line, then the
// conversation's lines.
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

// exactText: n arguments, the last being the text.
func exactText(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErrorf("%s takes %d argument(s), the last being the text (or - for stdin), got %d", cmd.CommandPath(), n, len(args))
		}
		return nil
	}
}

// readText is the message text: the argument, or stdin for "-",
// checked as serve checks it (bridge.CheckText within serve's bound) so a
// mistake is caught before any call.
func readText(cmd *cobra.Command, arg string) (string, error) {
	text := arg
	if arg == "-" {
		b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), mycelia.MaxTextBytes+1))
		if err != nil {
			return "", fmt.Errorf("read the text from stdin: %w", err)
		}
		text = string(b)
	}
	if e := bridge.CheckText(text, mycelia.MaxTextBytes); e != nil {
		if e.Problem == bridge.TextTooLarge {
			return "", usageErrorf("the text is %d bytes or more; at most %d are allowed (a mycologist reads your conversation itself)", e.Len, e.Max)
		}
		return "", usageErrorf("%v", e)
	}
	return text, nil
}

// sendResult prints what serve did with a message.
type sendResult struct{ mycelia.SendResponse }

func (r sendResult) Table(bool) ([]string, [][]string) {
	s := "message/" + r.ID + " "
	switch r.State {
	case mycelia.Delivered:
		s += "delivered to spore/" + r.To
	case mycelia.Queued:
		s += fmt.Sprintf("queued at position %d by spore/%s", r.Position, r.To)
	default:
		s += "waiting in the outbox of spore/" + r.To
		if r.Detail != "" {
			s += ": " + r.Detail
		}
	}
	if r.Woke {
		s += " (woken)"
	}
	if r.Duplicate {
		s += " (sent before; not sent again)"
	}
	return nil, [][]string{{s}}
}

func (r sendResult) Names() []string { return []string{"message/" + r.ID} }

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

func newCmdHosts(f *Factory, co *clientOptions) *cobra.Command {
	return &cobra.Command{
		Use:   mycelia.RouteHosts.Use(),
		Short: mycelia.RouteHosts.Short,
		Long:  mycelia.RouteHosts.Long,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.apiClient(co)
			if err != nil {
				return err
			}
			l, err := c.Hosts(cmd.Context())
			if err != nil {
				return err
			}
			return f.Print(hostList{HostList: l, now: f.Now()})
		},
	}
}

func newCmdHostLogs(f *Factory, co *clientOptions) *cobra.Command {
	var tail int
	cmd := &cobra.Command{
		Use:   mycelia.RouteHostLogs.Use(),
		Short: mycelia.RouteHostLogs.Short,
		Long:  mycelia.RouteHostLogs.Long,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageErrorf("%s takes at most one pod name, got %d", cmd.CommandPath(), len(args))
			}
			if len(args) == 1 {
				n := args[0]
				if n == "" || len(n) > 253 || strings.ContainsAny(n, "/?#%") || !utf8.ValidString(n) || transcript.Sanitize(n) != n {
					return usageErrorf("invalid pod name %q: a name from `mycologist hosts` or a spore id", transcript.Sanitize(n))
				}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if tail < 1 || tail > mycelia.MaxHostTail {
				return usageErrorf("invalid value %d for --tail: from 1 to %d", tail, mycelia.MaxHostTail)
			}
			c, err := f.apiClient(co)
			if err != nil {
				return err
			}
			name := f.Getenv(sporeenv.SporeID)
			if len(args) == 1 {
				name = args[0]
			}
			r, err := c.HostLogs(cmd.Context(), name, tail)
			if err != nil {
				return err
			}
			return f.Print(hostLogs{r})
		},
	}
	cmd.Flags().IntVar(&tail, "tail", mycelia.DefaultHostTail, "how many of the last lines (at most "+strconv.Itoa(mycelia.MaxHostTail)+")")
	return cmd
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
