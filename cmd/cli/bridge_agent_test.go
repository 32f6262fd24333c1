package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/sporeenv"
)

// TestBridgeWhoseClaudeCannotRunDoesNotStart: a claude the bridge is
// told of that is not there, or not executable, stops the bridge at
// start with its last line naming the path and where the name came from
// (what the runtimes show as the reason it exited), rather than a bridge
// that looks healthy while every turn dies.
func TestBridgeWhoseClaudeCannotRunDoesNotStart(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "claude")
	require.NoError(t, os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644))
	gone := filepath.Join(dir, "gone", "claude")
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"flag names a missing path", []string{"--claude-bin", gone}, nil, "claude: not found at " + gone + " (named by --claude-bin)"},
		{"environment names a missing path", nil, map[string]string{sporeenv.ClaudeBin: gone}, "claude: not found at " + gone + " (named by $SPORECTL_CLAUDE_BIN)"},
		{"not executable", []string{"--claude-bin", plain}, nil, "claude: " + plain + " is not executable (mode 0644) (named by --claude-bin)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			vars := map[string]string{sporeenv.BridgeToken: "sbt_x", "PATH": dir}
			for k, v := range tc.env {
				vars[k] = v
			}
			var out, errb bytes.Buffer
			f := NewFactory(IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb})
			f.Getenv = func(k string) string { return vars[k] }
			code := RunWith(context.Background(), f, append([]string{"bridge", "--home", home, "--addr", "127.0.0.1:0"}, tc.args...))
			require.Equal(t, ExitUsage, code, errb.String())
			require.Equal(t, tc.want, bridge.FatalError(errb.String()), "the reason the runtimes read back")
			require.NotContains(t, errb.String(), "sbt_x")
			_, err := os.Stat(filepath.Join(home, ".sporectl-bridge"))
			require.ErrorIs(t, err, os.ErrNotExist, "nothing of the bridge's was made")
		})
	}
}

// TestBridgePrestartFromEnvironment: --prestart's default is
// $SPORECTL_BRIDGE_PRESTART's, the flag wins over it, and a value that is
// not a boolean stops the bridge with a usage error.
func TestBridgePrestartFromEnvironment(t *testing.T) {
	cases := []struct {
		env  string
		args []string
		want bool
		err  string
	}{
		{"", nil, true, ""},
		{"false", nil, false, ""},
		{"0", []string{"--prestart"}, true, ""},
		{"true", []string{"--prestart=false"}, false, ""},
		{"maybe", nil, false, `invalid value "maybe" for $SPORECTL_BRIDGE_PRESTART`},
	}
	for _, tc := range cases {
		t.Run(tc.env+strings.Join(tc.args, " "), func(t *testing.T) {
			f := NewFactory(IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
			f.Getenv = func(k string) string {
				switch k {
				case sporeenv.BridgePrestart:
					return tc.env
				case "HOME":
					return "/home/spore"
				}
				return ""
			}
			var got *bridgeOptions
			cmd := newCmdBridge(f, func(_ context.Context, o *bridgeOptions) error { got = o; return nil })
			cmd.SetArgs(tc.args)
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			err := cmd.ExecuteContext(t.Context())
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				require.Nil(t, got)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got.Prestart)
		})
	}
}
