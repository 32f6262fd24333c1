package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/agent"
)

// TestAgentThatCannotStartIsReported: an agent that cannot be run, or
// exits before it writes a line, leaves why in the status's agent_error
// (bounded, its stderr's last words included), where the pass reads it;
// a turn that starts clears it.
func TestAgentThatCannotStartIsReported(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	require.NoError(t, os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644))
	long := strings.Repeat("é", 5000)
	cases := []struct {
		name string
		bin  string
		want []string
	}{
		{"not found", filepath.Join(dir, "gone"), []string{"start: start claude " + filepath.Join(dir, "gone"), "no such file or directory"}},
		{"permission denied", plain, []string{"permission denied"}},
		{"exits at once", script(t, "cat >/dev/null\necho 'Error: unknown option --bogus' >&2\nexit 1\n"),
			[]string{"exited before writing a line: exit status 1", "its stderr ends: Error: unknown option --bogus"}},
		{"exits at once saying much", script(t, "cat >/dev/null\necho '"+long+"' >&2\nexit 3\n"),
			[]string{"exited before writing a line: exit status 3", "its stderr ends: éé"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := startBridge(t, t.TempDir(), &agent.Claude{Bin: tc.bin}, func(c *Config) { c.MaxAttempts = 1 })
			require.Empty(t, h.waitStatus(5*time.Second, func(s bridge.Status) bool { return s.State == bridge.StateIdle }).AgentError,
				"nothing is reported before the agent was started")
			h.prompt("p1", "go")
			st := h.waitStatus(10*time.Second, func(s bridge.Status) bool { return s.AgentError != "" })
			for _, w := range tc.want {
				require.Contains(t, st.AgentError, w)
			}
			require.LessOrEqual(t, len(st.AgentError), bridge.MaxStatusText, "bounded by the bridge")
			require.True(t, utf8.ValidString(st.AgentError), "cut at a character's start")
		})
	}

	t.Run("cleared by a turn that starts", func(t *testing.T) {
		flag := filepath.Join(t.TempDir(), "works")
		bin := script(t, "cat >/dev/null\nif [ ! -e "+flag+" ]; then echo broken >&2; exit 1; fi\n"+initLine+"\n"+resultLine+"\n")
		h := startBridge(t, t.TempDir(), &agent.Claude{Bin: bin}, func(c *Config) { c.MaxAttempts = 1 })
		h.prompt("p1", "go")
		st := h.waitStatus(10*time.Second, func(s bridge.Status) bool { return s.AgentError != "" })
		require.Contains(t, st.AgentError, "its stderr ends: broken")
		require.NoError(t, os.WriteFile(flag, nil, 0o644))
		h.prompt("p2", "go")
		h.waitStatus(10*time.Second, func(s bridge.Status) bool { return s.AgentError == "" && s.Queue == 0 && s.State == bridge.StateIdle })
	})
}
