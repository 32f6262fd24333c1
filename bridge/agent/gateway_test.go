package agent

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge/sporeenv"
)

// fakeToken and fakeKey stand for a spore's API token and the operator's
// model key: neither may appear in an error.
const (
	fakeToken = "spt_token-that-must-not-leak"
	fakeKey   = "sk-ant-operator-key-that-must-not-leak"
)

func getenvOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestGatewayFromEnv(t *testing.T) {
	home := t.TempDir()
	withFile := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(withFile, filepath.Dir(sporeenv.APITokenFile)), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(withFile, sporeenv.APITokenFile), []byte(fakeToken+"\n"), 0o600))
	emptyFile := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(emptyFile, filepath.Dir(sporeenv.APITokenFile)), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(emptyFile, sporeenv.APITokenFile), []byte("\n"), 0o600))

	for _, tc := range []struct {
		name    string
		env     map[string]string
		home    string
		want    *Gateway
		wantErr string
	}{
		{name: "off", env: map[string]string{sporeenv.SporeID: "a1", sporeenv.APIToken: fakeToken}, home: home},
		{name: "token from the environment (kube)",
			env:  map[string]string{sporeenv.ModelURL: "http://sporectl-api.ns.svc/model/", sporeenv.SporeID: "a1", sporeenv.APIToken: fakeToken},
			home: home, want: &Gateway{URL: "http://sporectl-api.ns.svc/model", Key: "a1:" + fakeToken}},
		{name: "token from the home (local)",
			env:  map[string]string{sporeenv.ModelURL: "http://127.0.0.1:7070/model", sporeenv.SporeID: "a1"},
			home: withFile, want: &Gateway{URL: "http://127.0.0.1:7070/model", Key: "a1:" + fakeToken}},
		{name: "no token anywhere", env: map[string]string{sporeenv.ModelURL: "http://h/model", sporeenv.SporeID: "a1"},
			home: home, wantErr: "no API token for the model gateway: SPORECTL_API_TOKEN is not set and"},
		{name: "empty token file", env: map[string]string{sporeenv.ModelURL: "http://h/model", sporeenv.SporeID: "a1"},
			home: emptyFile, wantErr: "is empty"},
		{name: "no spore id", env: map[string]string{sporeenv.ModelURL: "http://h/model", sporeenv.APIToken: fakeToken},
			home: home, wantErr: "SPORECTL_SPORE_ID is not a spore id"},
		{name: "an id with a colon would forge another's key",
			env:  map[string]string{sporeenv.ModelURL: "http://h/model", sporeenv.SporeID: "a1:x", sporeenv.APIToken: fakeToken},
			home: home, wantErr: "is not a spore id"},
		{name: "not http", env: map[string]string{sporeenv.ModelURL: "ftp://h/model", sporeenv.SporeID: "a1", sporeenv.APIToken: fakeToken},
			home: home, wantErr: "must be an http(s) URL"},
		{name: "no host", env: map[string]string{sporeenv.ModelURL: "/model", sporeenv.SporeID: "a1", sporeenv.APIToken: fakeToken},
			home: home, wantErr: "must be an http(s) URL"},
		{name: "user info is refused and not repeated",
			env:  map[string]string{sporeenv.ModelURL: "http://u:" + fakeKey + "@h/model", sporeenv.SporeID: "a1", sporeenv.APIToken: fakeToken},
			home: home, wantErr: "no user info"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gw, err := GatewayFromEnv(getenvOf(tc.env), tc.home)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				require.NotContains(t, err.Error(), fakeToken)
				require.NotContains(t, err.Error(), fakeKey)
				require.Nil(t, gw)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, gw)
		})
	}
}

func TestModelVar(t *testing.T) {
	for name, want := range map[string]bool{
		"ANTHROPIC_API_KEY": true, "ANTHROPIC_AUTH_TOKEN": true, "ANTHROPIC_BASE_URL": true,
		"ANTHROPIC_CUSTOM_HEADERS": true, "ANTHROPIC_MODEL": true, "CLAUDE_CODE_OAUTH_TOKEN": true,
		"CLAUDE_CODE_USE_BEDROCK": true, "CLAUDE_CODE_USE_VERTEX": true, "CLAUDE_CODE_SKIP_BEDROCK_AUTH": true,
		"AWS_BEARER_TOKEN_BEDROCK":                 true,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": false, "CLAUDE_CONFIG_DIR": false, "DISABLE_AUTOUPDATER": false,
		"AWS_ACCESS_KEY_ID": false, "PATH": false, "ANTHROPIC": false, sporeenv.APIToken: false,
	} {
		require.Equal(t, want, ModelVar(name), name)
	}
}

func TestAgentEnvBehindTheGatewayHoldsOnlyTheSporesKey(t *testing.T) {
	gw := &Gateway{URL: "http://127.0.0.1:7070/model", Key: "a1:" + fakeToken}
	base := []string{"PATH=/bin", "HOME=/root", sporeenv.BridgeToken + "=secret", "ANTHROPIC_API_KEY=" + fakeKey,
		"ANTHROPIC_AUTH_TOKEN=" + fakeKey, "ANTHROPIC_BASE_URL=https://api.anthropic.com", "CLAUDE_CODE_OAUTH_TOKEN=" + fakeKey,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", sporeenv.SporeID + "=a1"}
	extra := []string{"ANTHROPIC_BASE_URL=http://f", "ANTHROPIC_API_KEY=" + fakeKey, "DISABLE_AUTOUPDATER=1"}
	require.Equal(t, []string{"PATH=/bin", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", sporeenv.SporeID + "=a1",
		"HOME=/home/spore", "DISABLE_AUTOUPDATER=1",
		"ANTHROPIC_BASE_URL=http://127.0.0.1:7070/model", "ANTHROPIC_API_KEY=a1:" + fakeToken},
		agentEnv(base, "/home/spore", extra, gw))

	// Direct mode: today's pass-through.
	require.Equal(t, []string{"PATH=/bin", "ANTHROPIC_API_KEY=" + fakeKey, "HOME=/home/spore", "ANTHROPIC_BASE_URL=http://f"},
		agentEnv([]string{"PATH=/bin", "ANTHROPIC_API_KEY=" + fakeKey}, "/home/spore", []string{"ANTHROPIC_BASE_URL=http://f"}, nil))
}

// TestClaudeProcessBehindTheGateway: the environment the agent's process
// really gets (a stand-in claude that prints it), with the operator's key
// in the bridge's own environment.
func TestClaudeProcessBehindTheGateway(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "claude")
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\nenv\n"), 0o755))
	t.Setenv("ANTHROPIC_API_KEY", fakeKey)
	t.Setenv("ANTHROPIC_AUTH_TOKEN", fakeKey)
	for _, tc := range []struct {
		name string
		gw   *Gateway
		want []string
		none []string
	}{
		{name: "gateway", gw: &Gateway{URL: "http://127.0.0.1:7070/model", Key: "a1:" + fakeToken},
			want: []string{"ANTHROPIC_BASE_URL=http://127.0.0.1:7070/model", "ANTHROPIC_API_KEY=a1:" + fakeToken},
			none: []string{fakeKey, "ANTHROPIC_AUTH_TOKEN="}},
		{name: "direct", want: []string{"ANTHROPIC_API_KEY=" + fakeKey, "ANTHROPIC_AUTH_TOKEN=" + fakeKey},
			none: []string{"ANTHROPIC_BASE_URL="}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Claude{Bin: bin, Gateway: tc.gw}
			p, err := c.Start(context.Background(), Turn{Home: dir, SessionID: "S", Prompt: "hi"})
			require.NoError(t, err)
			out, err := io.ReadAll(p.Stdout())
			require.NoError(t, err)
			require.NoError(t, p.Wait())
			env := strings.Split(strings.TrimSpace(string(out)), "\n")
			for _, kv := range tc.want {
				require.Contains(t, env, kv)
			}
			for _, s := range tc.none {
				require.NotContains(t, string(out), s)
			}
		})
	}
}
