package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge/sporeenv"
)

func TestClaudeArgs(t *testing.T) {
	c := &Claude{Bin: "claude", Args: []string{"--permission-mode", "acceptEdits"}}
	require.Equal(t, []string{"-p", "--output-format", "stream-json", "--verbose", "--session-id", "S", "--permission-mode", "acceptEdits"},
		c.args(Turn{SessionID: "S"}, false))
	require.Equal(t, []string{"-p", "--output-format", "stream-json", "--verbose", "--resume", "S", "--permission-mode", "acceptEdits"},
		c.args(Turn{SessionID: "S", Resume: true}, false))
}

func TestAgentEnvDropsTokenAndSetsHome(t *testing.T) {
	env := agentEnv([]string{"PATH=/bin", "HOME=/root", sporeenv.BridgeToken + "=secret", "X=1"}, "/home/spore", []string{"ANTHROPIC_BASE_URL=http://f"}, nil)
	require.Equal(t, []string{"PATH=/bin", "X=1", "HOME=/home/spore", "ANTHROPIC_BASE_URL=http://f"}, env)
}

func TestEchoSpeaksStreamJSONAndSaysItIsNotClaude(t *testing.T) {
	p, err := Echo{}.Start(context.Background(), Turn{SessionID: "S", Prompt: "hi there", Home: "/h"})
	require.NoError(t, err)
	var lines []map[string]any
	sc := bufio.NewScanner(p.Stdout())
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m))
		lines = append(lines, m)
	}
	require.NoError(t, p.Wait())
	require.Len(t, lines, 3)
	require.Equal(t, "init", lines[0]["subtype"])
	require.Equal(t, EchoModel, lines[0]["model"])
	require.Equal(t, "S", lines[0]["session_id"])
	require.Equal(t, "assistant", lines[1]["type"])
	require.Equal(t, "result", lines[2]["type"])
	require.Equal(t, "echo: hi there", lines[2]["result"])
	// Claude Code's shape: 2 words in, 3 out, $0.000001 a token.
	require.Equal(t, map[string]any{"input_tokens": 2.0, "output_tokens": 3.0}, lines[2]["usage"])
	require.InDelta(t, 0.000005, lines[2]["total_cost_usd"], 1e-12)
}
