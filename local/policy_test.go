package local_test

import (
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sporectl/sporectl/bridge/sporeenv"
	"github.com/sporectl/sporectl/local"
	"github.com/sporectl/sporectl/state"
)

func TestRoot(t *testing.T) {
	stateDir := func() (string, error) { return "/state/sporectl", nil }
	noStateDir := func() (string, error) { return "", errors.New("no home") }
	pg := state.Info{Backend: "postgres", Location: "postgres://db/colony"}
	pgRoot, err := local.Root(pg, stateDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		store    state.Info
		stateDir func() (string, error)
		want     string
		err      bool
	}{
		{"a directory store: beside its files", state.Info{Backend: "dir", Location: "/colony/store"}, noStateDir, "/colony/store", false},
		{"another backend: under the state directory", pg, stateDir, pgRoot, false},
		{"another database: another directory", state.Info{Backend: "postgres", Location: "postgres://db/other"}, stateDir, "", false},
		{"another backend without a state directory", pg, noStateDir, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := local.Root(tc.store, tc.stateDir)
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want an error: %v", err, tc.err)
			}
			if tc.err {
				return
			}
			if tc.store.Backend != "dir" {
				if filepath.Dir(got) != "/state/sporectl/local" {
					t.Errorf("root %s is not under the state directory's local/", got)
				}
				if tc.want == "" && got == pgRoot {
					t.Errorf("two stores share the root %s", got)
				}
			}
			if tc.want != "" && got != tc.want {
				t.Errorf("root = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestInheritedEnv(t *testing.T) {
	env := []string{
		"ANTHROPIC_API_KEY=k", "ANTHROPIC_BASE_URL=http://m", "CLAUDE_CONFIG_DIR=/c", sporeenv.ClaudeBin + "=/bin/claude",
		"HTTPS_PROXY=p", "HTTP_PROXY=p", "NO_PROXY=n", "LANG=C.UTF-8", "TZ=UTC", sporeenv.BridgePrestart + "=false",
		"HOME=/home/me", "PATH=/bin", "SPORECTL_STORE=postgres://secret", "AWS_SECRET_ACCESS_KEY=s", "SSH_AUTH_SOCK=/s", "ANTHROPIC", "=x",
	}
	want := env[:10]
	if diff := cmp.Diff(want, local.InheritedEnv(env, false)); diff != "" {
		t.Errorf("direct mode: inherited (-want +got):\n%s", diff)
	}
	// Behind the gateway: no ANTHROPIC_* and no other model credential or
	// route of the person's; Claude Code's other settings still pass.
	gw := append(slices.Clone(env), "ANTHROPIC_AUTH_TOKEN=t", "CLAUDE_CODE_OAUTH_TOKEN=o", "CLAUDE_CODE_USE_BEDROCK=1",
		"AWS_BEARER_TOKEN_BEDROCK=b", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
	want = []string{"CLAUDE_CONFIG_DIR=/c", sporeenv.ClaudeBin + "=/bin/claude",
		"HTTPS_PROXY=p", "HTTP_PROXY=p", "NO_PROXY=n", "LANG=C.UTF-8", "TZ=UTC", sporeenv.BridgePrestart + "=false", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
	if diff := cmp.Diff(want, local.InheritedEnv(gw, true)); diff != "" {
		t.Errorf("gateway: inherited (-want +got):\n%s", diff)
	}
}
