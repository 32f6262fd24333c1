package cli

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/mycelia"
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
(see "Mycologists and swarms" in the docs). Run inside a spore, also as "mycologist" / "swarm".`

func newCmdMycologist(f *Factory) *cobra.Command {
	return newPodGroup(f, "mycologist", "Talk to the mycologists from inside a spore: "+verbs("mycologist"),
		`Commands a spore runs inside its pod, as clients of sporectl serve. Rank and
reach come from the store, never from the caller: a spore may only ask; a
mycologist may also list, read and tell the spores below it in its reach.

`+clientEnvHelp)
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

func windowFlag(fs *pflag.FlagSet, d *time.Duration) {
	fs.DurationVar(d, "window", mycelia.DefaultWindow, "how far back to look (at most "+mycelia.MaxWindow.String()+")")
}

func checkWindow(d time.Duration) error {
	if d <= 0 || d > mycelia.MaxWindow {
		return usageErrorf("invalid value %s for --window: more than 0 and at most %s", d, mycelia.MaxWindow)
	}
	return nil
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
