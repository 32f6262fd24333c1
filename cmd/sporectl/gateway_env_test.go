package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLocalBridgeEnvironmentFollowsTheModelGateway: the real binary wires
// the store's --model-gateway into the local runtime. On (the default), a
// woken spore's bridge gets the gateway's URL from the store's api-url and
// none of the ANTHROPIC_* of the command that woke it; off, it inherits
// them as before, and no gateway URL.
func TestLocalBridgeEnvironmentFollowsTheModelGateway(t *testing.T) {
	const key = "sk-ant-wakers-key-5e1f0a-must-not-reach-a-spore"
	env := []string{"ANTHROPIC_API_KEY=" + key, "ANTHROPIC_BASE_URL=https://api.example", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
	for _, tc := range []struct {
		mode string
		init []string
		want []string
		none []string
	}{
		{mode: "default", init: []string{"--api-url", "http://127.0.0.1:7171"},
			want: []string{"SPORECTL_MODEL_URL=http://127.0.0.1:7171/model", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"},
			none: []string{"ANTHROPIC_"}},
		{mode: "off", init: []string{"--model-gateway", "off"},
			want: []string{"ANTHROPIC_API_KEY=" + key, "ANTHROPIC_BASE_URL=https://api.example"},
			none: []string{"SPORECTL_MODEL_URL="}},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			r := newRig(t, env, append([]string{"--agent", "echo", "--no-operator"}, tc.init...)...)
			r.wake("w1")
			b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(r.runFile("w1").PID), "environ"))
			require.NoError(t, err)
			got := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
			for _, kv := range tc.want {
				require.Contains(t, got, kv)
			}
			for _, kv := range got {
				for _, prefix := range tc.none {
					require.False(t, strings.HasPrefix(kv, prefix), "the bridge has %s", strings.SplitN(kv, "=", 2)[0])
				}
			}
		})
	}
}
