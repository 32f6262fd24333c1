package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/bridge/agent"
	"github.com/sporectl/sporectl/bridge/server"
	"github.com/sporectl/sporectl/bridge/sporeenv"
	"github.com/sporectl/sporectl/internal/quote"
)

type bridgeOptions struct {
	f              *Factory
	Addr           string
	Home           string
	Agent          string
	ClaudeBin      string
	PermissionMode string
	ExtraArgs      []string
	// Prestart keeps the next turn's Claude Code started and waiting for
	// its prompt (agent.Claude.Prestart): from --prestart, else
	// $SPORECTL_BRIDGE_PRESTART, else on.
	Prestart    bool
	prestartSet bool // --prestart was given
}

// newCmdBridge builds the command; runF, when not nil, is called instead of
// running it (tests of what the flags parse into).
func newCmdBridge(f *Factory, runF func(context.Context, *bridgeOptions) error) *cobra.Command {
	o := &bridgeOptions{f: f}
	cmd := &cobra.Command{
		Use:   "bridge [--addr :8080] [--home DIR] [--agent claude|echo] [--prestart=false] [-- extra agent args]",
		Short: "Run the bridge around Claude Code inside a spore",
		Long: `Run the bridge: the HTTP server inside a spore that queues prompts, runs them one
turn at a time through Claude Code on one resumed session, numbers every line the
agent writes into a durable log in the home, and serves status and events.

The bearer token comes from $SPORECTL_BRIDGE_TOKEN or HOME/.sporectl-bridge/token.
--agent echo runs a built-in demo agent instead of Claude Code: it answers every
prompt with "echo: <prompt>" and needs no key. With Claude Code, the next turn's
process is started while the bridge waits for a prompt (--prestart, on by default:
one idle Claude Code, about 155 MiB). The HTTP API is in the docs, under "The bridge".`,
		Args: func(cmd *cobra.Command, args []string) error {
			if n := cmd.ArgsLenAtDash(); n == 0 || (n < 0 && len(args) == 0) {
				return nil
			}
			return usageErrorf("bridge takes no arguments; put agent arguments after --")
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ExtraArgs = args
			o.prestartSet = cmd.Flags().Changed("prestart")
			if err := o.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.run(cmd.Context())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Addr, "addr", ":8080", "address to serve HTTP on")
	fl.StringVar(&o.Home, "home", "", "the spore's home (default $HOME)")
	fl.StringVar(&o.Agent, "agent", agent.Default, "agent: claude, or echo (built-in demo, not Claude)")
	fl.StringVar(&o.ClaudeBin, "claude-bin", "", "claude executable (default $"+sporeenv.ClaudeBin+", else claude on $PATH)")
	fl.StringVar(&o.PermissionMode, "permission-mode", "acceptEdits", "Claude Code --permission-mode for every turn (empty: do not pass one)")
	fl.BoolVar(&o.Prestart, "prestart", true, "keep the next turn's Claude Code started and waiting for its prompt: a faster reply for one idle process (default $"+sporeenv.BridgePrestart+", else true)")
	return cmd
}

func (o *bridgeOptions) validate() error {
	if err := validateAgent(o.Agent); err != nil {
		return err
	}
	if o.Agent == agent.KindEcho && len(o.ExtraArgs) > 0 {
		return usageErrorf("the echo agent takes no agent arguments")
	}
	if !o.prestartSet {
		if v := o.f.Getenv(sporeenv.BridgePrestart); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return usageErrorf("invalid value %s for $%s: use true or false", quote.Value(v), sporeenv.BridgePrestart)
			}
			o.Prestart = b
		}
	}
	if o.Home == "" {
		o.Home = o.f.Getenv("HOME")
	}
	if o.Home == "" {
		return usageErrorf("no home: pass --home or set $HOME")
	}
	return nil
}

// validateAgent checks an --agent value, the same way for init and bridge.
func validateAgent(kind string) error {
	if !agent.ValidKind(kind) {
		return usageErrorf("invalid value %s for --agent: use %s", quote.Value(kind), strings.Join(agent.Kinds(), " or "))
	}
	return nil
}

func (o *bridgeOptions) starter() (agent.Starter, error) {
	if o.Agent == agent.KindEcho {
		return agent.Echo{}, nil
	}
	bin, err := findClaude(o.ClaudeBin, o.f.Getenv)
	if err != nil {
		return nil, err
	}
	var args []string
	if o.PermissionMode != "" {
		args = append(args, "--permission-mode", o.PermissionMode)
	}
	if id := o.f.Getenv(sporeenv.Identity); id != "" {
		// Who the spore is and which mycelia commands it may use, from the
		// runtime that started it.
		args = append(args, "--append-system-prompt", id)
	}
	// With the store's gateway on, the runtime named it: Claude Code then
	// reaches the model through serve with the spore's own credential.
	gw, err := agent.GatewayFromEnv(o.f.Getenv, o.Home)
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	c := &agent.Claude{Bin: bin, Args: append(args, o.ExtraArgs...), Logger: o.logger(), Gateway: gw, Prestart: o.Prestart}
	// A named path that is not there (or not executable) is said now, as
	// the bridge's last words, rather than by every prompt's turn dying.
	if err := c.Check(); err != nil {
		return nil, usageErrorf("%v (%s)", err, o.claudeSource())
	}
	return c, nil
}

// claudeSource says where the claude executable's name came from, for
// an error about it.
func (o *bridgeOptions) claudeSource() string {
	switch {
	case o.ClaudeBin != "":
		return "named by --claude-bin"
	case o.f.Getenv(sporeenv.ClaudeBin) != "":
		return "named by $" + sporeenv.ClaudeBin
	}
	return "found on $PATH"
}

// findClaude is the claude executable the bridge runs: flag (--claude-bin),
// else $SPORECTL_CLAUDE_BIN, else claude on $PATH. init looks the same
// way to warn before a spore fails to start.
func findClaude(flag string, getenv func(string) string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if bin := getenv(sporeenv.ClaudeBin); bin != "" {
		return bin, nil
	}
	for _, dir := range filepath.SplitList(getenv("PATH")) {
		if dir == "" {
			continue // not the working directory, as exec.LookPath
		}
		p := filepath.Join(dir, "claude")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", usageErrorf("no claude executable: pass --claude-bin, set $%s, or use --agent echo", sporeenv.ClaudeBin)
}

// logger is the bridge's: its stderr is its log (the local runtime's run
// log, the container's), read by 'sporectl logs', so it logs at info
// unless -v asks for more — its agent's stderr lines are info.
func (o *bridgeOptions) logger() *slog.Logger {
	if o.f.Global.Verbose > 0 {
		return o.f.Logger()
	}
	return slog.New(slog.NewTextHandler(o.f.IO.ErrOut, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

func (o *bridgeOptions) run(ctx context.Context) error {
	logger := o.logger()
	ag, err := o.starter()
	if err != nil {
		return err
	}
	token, err := server.LoadToken(o.Home, o.f.Getenv(sporeenv.BridgeToken))
	if err != nil {
		return usageErrorf("%v", err)
	}
	if err := os.MkdirAll(o.Home, 0o700); err != nil {
		return fmt.Errorf("create home %s: %w", o.Home, err)
	}
	s, err := server.New(ctx, server.Config{Home: o.Home, Token: token, Agent: ag, Logger: logger})
	if err != nil {
		return fmt.Errorf("start bridge on %s: %w", o.Home, err)
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		_ = s.Close()
		return fmt.Errorf("listen on %s: %w", o.Addr, err)
	}
	if o.Agent == agent.KindEcho {
		logger.Warn("running the built-in echo agent: answers are not from Claude")
	}
	logger.Info("bridge serving", "addr", ln.Addr().String(), "home", o.Home, "agent", ag.Name())
	runErr := s.Run(ctx, ln)
	if errors.Is(runErr, context.Canceled) {
		runErr = nil
	}
	return errors.Join(runErr, s.Close())
}
