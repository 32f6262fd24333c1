package server

import (
	"context"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"

	"github.com/sporectl/sporectl/bridge/agent"
	"github.com/sporectl/sporectl/bridge/sporeenv"
)

// The bridge-restart tests run the bridge as a separate process: this
// test binary, re-executed with helperEnv set, becomes a bridge.
const (
	helperEnv       = "SPORECTL_BRIDGE_TEST_HELPER"
	helperHomeEnv   = "SPORECTL_BRIDGE_TEST_HOME"
	helperAddrEnv   = "SPORECTL_BRIDGE_TEST_ADDR"
	helperClaudeEnv = "SPORECTL_BRIDGE_TEST_CLAUDE" // empty: the echo agent
	helperNofileEnv = "SPORECTL_BRIDGE_TEST_NOFILE" // the bridge's open-file limit, if set
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		os.Exit(helperMain())
	}
	os.Exit(m.Run())
}

func helperMain() int {
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var ag agent.Starter = agent.Echo{}
	if bin := os.Getenv(helperClaudeEnv); bin != "" {
		ag = &agent.Claude{Bin: bin, Args: []string{"--permission-mode", "acceptEdits"}, Logger: logger, Prestart: true}
	}
	if v := os.Getenv(helperNofileEnv); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		lim := syscall.Rlimit{Cur: n, Max: n}
		if err == nil {
			err = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
		}
		if err != nil {
			logger.Error("helper bridge: open-file limit", "err", err)
			return 1
		}
	}
	s, err := New(ctx, Config{Home: os.Getenv(helperHomeEnv), Token: os.Getenv(sporeenv.BridgeToken), Agent: ag, Logger: logger})
	if err != nil {
		logger.Error("helper bridge", "err", err)
		return 1
	}
	ln, err := net.Listen("tcp", os.Getenv(helperAddrEnv))
	if err != nil {
		logger.Error("helper bridge", "err", err)
		return 1
	}
	runErr := s.Run(ctx, ln)
	if err := s.Close(); err != nil || (runErr != nil && ctx.Err() == nil) {
		logger.Error("helper bridge", "run", runErr, "close", err)
		return 1
	}
	return 0
}
