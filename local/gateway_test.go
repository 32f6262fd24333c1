package local

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/sporeenv"
	"github.com/sporectl/sporectl/reconcile"
)

// operatorKey is the model key in the operator's environment: unique, so
// finding it anywhere is finding a leak.
const operatorKey = "sk-ant-operator-c0ffee-3f9a1d7e-must-stay-with-serve"

const modelURL = "http://127.0.0.1:7070/model"

// TestTheKeyIsFoundNowhereInASporeBehindTheGateway starts a spore as the
// CLI does (Config.Env from the operator's environment through
// InheritedEnv) while that environment holds a model key, with a stand-in
// claude that copies its environment into the home and then sleeps, so a
// turn runs and needs no model. Behind the gateway the key is in no file
// of the spore's home or run directory and in no environment or command
// line of any process of its tree; the agent holds the gateway's URL and
// the spore's id:token instead, the bridge no ANTHROPIC_* at all. In direct
// mode the same search finds the key in the agent's environment: the
// search can see a leak.
func TestTheKeyIsFoundNowhereInASporeBehindTheGateway(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", operatorKey)
	t.Setenv("ANTHROPIC_AUTH_TOKEN", operatorKey)
	t.Setenv("ANTHROPIC_BASE_URL", "https://api.anthropic.com")
	t.Setenv("CLAUDE_CODE_OAUTH_TOKEN", operatorKey)
	bin := filepath.Join(t.TempDir(), "claude")
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\nenv > \"$HOME/agent-env.txt\"\nexec sleep 600\n"), 0o755))
	t.Setenv(sporeenv.ClaudeBin, bin)

	for _, tc := range []struct {
		name     string
		modelURL string
	}{{"gateway", modelURL}, {"direct", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			gateway := tc.modelURL != ""
			r, err := New(Config{Root: t.TempDir(), Binary: sporectlBin, Agent: "claude", StopTimeout: 2 * time.Second,
				Env: InheritedEnv(os.Environ(), gateway), ModelURL: tc.modelURL})
			require.NoError(t, err)
			id := "keyless-" + tc.name
			t.Cleanup(func() { _ = r.Delete(ctx, id, true) })
			require.NoError(t, r.Start(ctx, spore(id), reconcile.Launch{Identity: "You are " + id, Creds: creds}))
			waitReady(t, r, id)
			ep, err := r.Bridge(ctx, id)
			require.NoError(t, err)
			c, err := bridge.NewClient(ep.BaseURL, ep.Token, ep.Client)
			require.NoError(t, err)
			_, err = c.Prompt(ctx, bridge.PromptRequest{ID: "p1", From: "user:test", Text: "hello"})
			require.NoError(t, err)
			var agentPID int
			require.Eventually(t, func() bool {
				st, err := c.Status(ctx)
				if err != nil || st.State != bridge.StateWorking || st.AgentPID == 0 {
					return false
				}
				agentPID = st.AgentPID
				_, err = os.Stat(filepath.Join(r.home(id), "agent-env.txt"))
				return err == nil
			}, 30*time.Second, 50*time.Millisecond, "a turn should be running")
			rf, err := readRunFile(r.runPath(id, ".json"))
			require.NoError(t, err)

			// Every process of the tree: the bridge's session and whatever
			// carries the spore's mark.
			pids := append(sessionMembers(rf.PID), marked(id)...)
			slices.Sort(pids)
			pids = slices.Compact(pids)
			require.Contains(t, pids, rf.PID)
			require.Contains(t, pids, agentPID)
			bridgeEnv := procEnv(t, rf.PID)
			agentEnv := procEnv(t, agentPID)

			if !gateway {
				require.Contains(t, agentEnv, "ANTHROPIC_API_KEY="+operatorKey, "direct mode passes the key: the search below would see it")
				require.Contains(t, bridgeEnv, "ANTHROPIC_API_KEY="+operatorKey)
				require.NotContains(t, bridgeEnv, sporeenv.ModelURL+"=")
				return
			}
			require.Contains(t, bridgeEnv, sporeenv.ModelURL+"="+modelURL)
			for _, kv := range bridgeEnv {
				require.False(t, strings.HasPrefix(kv, "ANTHROPIC_"), "the bridge inherits no ANTHROPIC_*: %s", strings.SplitN(kv, "=", 2)[0])
			}
			require.Contains(t, agentEnv, "ANTHROPIC_BASE_URL="+modelURL)
			require.Contains(t, agentEnv, "ANTHROPIC_API_KEY="+id+":"+creds.APIToken)
			var anthropic []string
			for _, kv := range agentEnv {
				if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "ANTHROPIC_") || name == "CLAUDE_CODE_OAUTH_TOKEN" {
					anthropic = append(anthropic, name)
				}
			}
			require.ElementsMatch(t, []string{"ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"}, anthropic)

			for _, pid := range pids {
				for _, f := range []string{"environ", "cmdline"} {
					b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, f))
					if err != nil {
						continue // gone since it was listed
					}
					require.False(t, bytes.Contains(b, []byte(operatorKey)), "the key is in /proc/%d/%s", pid, f)
				}
			}
			var files int
			require.NoError(t, filepath.WalkDir(r.cfg.Root, func(path string, d fs.DirEntry, err error) error {
				require.NoError(t, err)
				if !d.Type().IsRegular() {
					return nil
				}
				b, err := os.ReadFile(path)
				require.NoError(t, err)
				require.False(t, bytes.Contains(b, []byte(operatorKey)), "the key is in %s", path)
				files++
				return nil
			}))
			require.Greater(t, files, 3, "the home and run directory were searched")
			b, err := os.ReadFile(filepath.Join(r.home(id), "agent-env.txt"))
			require.NoError(t, err)
			require.Contains(t, string(b), "ANTHROPIC_API_KEY="+id+":"+creds.APIToken, "the stand-in agent copied what it was given")
		})
	}
}

// TestNewDropsModelVariablesBehindTheGateway: whatever its caller hands
// it, a runtime with a model URL passes no model variable to a bridge; in
// direct mode it passes them.
func TestNewDropsModelVariablesBehindTheGateway(t *testing.T) {
	env := []string{"ANTHROPIC_API_KEY=" + operatorKey, "CLAUDE_CODE_OAUTH_TOKEN=" + operatorKey, "CLAUDE_CONFIG_DIR=/c", "LANG=C"}
	r, err := New(Config{Root: t.TempDir(), Binary: sporectlBin, Env: env, ModelURL: modelURL})
	require.NoError(t, err)
	require.Equal(t, []string{"CLAUDE_CONFIG_DIR=/c", "LANG=C"}, r.cfg.Env)
	require.Equal(t, "ANTHROPIC_API_KEY="+operatorKey, env[0], "the caller's slice is not changed")
	r, err = New(Config{Root: t.TempDir(), Binary: sporectlBin, Env: env})
	require.NoError(t, err)
	require.Equal(t, env, r.cfg.Env)
}

// procEnv is the environment of process pid.
func procEnv(t *testing.T, pid int) []string {
	t.Helper()
	b, err := environ(pid)
	require.NoError(t, err)
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}
