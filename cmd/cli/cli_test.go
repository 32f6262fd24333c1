package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sporectl/sporectl/state/statetest"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var testNow = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

type result struct {
	out, err string
	code     int
}

// run executes one command line in-process against store, at a fixed time.
func run(t *testing.T, store string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	f := NewFactory(IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb})
	f.Now = func() time.Time { return testNow }
	f.Getenv = func(k string) string {
		if k == EnvStore {
			return store
		}
		return ""
	}
	code := RunWith(context.Background(), f, args)
	return result{out.String(), errb.String(), code}
}

func mustRun(t *testing.T, store string, args ...string) string {
	t.Helper()
	r := run(t, store, args...)
	require.Equal(t, 0, r.code, "sporectl %s: %s", strings.Join(args, " "), r.err)
	return r.out
}

// fixture is a store with a few spores, created at testNow, checked when
// the test ends.
func fixture(t *testing.T) string {
	t.Helper()
	store := fixtureToDamage(t)
	statetest.CheckDirOnCleanup(t, store)
	return store
}

// fixtureToDamage is fixture for a test that damages the store on
// purpose: not checked when it ends.
func fixtureToDamage(t *testing.T) string {
	t.Helper()
	store := filepath.Join(t.TempDir(), "store")
	mustRun(t, store, "init")
	mustRun(t, store, "create", "arch-1", "--rank", "arch", "--colony", "hq")
	mustRun(t, store, "create", "lab-myco", "--rank", "colony", "--colony", "lab")
	mustRun(t, store, "create", "worker-7", "--colony", "lab", "--swarm", "build", "--role", "tester", "--cpu", "500m", "--memory", "1Gi")
	return store
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name+".golden")
	if *update {
		require.NoError(t, os.WriteFile(p, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "missing golden file; run go test ./cmd/cli -update")
	require.Equal(t, string(want), got, "output differs from %s (rerun with -update if the change is intended)", p)
}

func TestGoldenOutputs(t *testing.T) {
	store := fixture(t)
	cases := []struct {
		name string
		args []string
	}{
		{"list.table", []string{"list"}},
		{"list.wide", []string{"list", "-o", "wide"}},
		{"list.json", []string{"list", "-o", "json"}},
		{"list.yaml", []string{"list", "-o", "yaml"}},
		{"list.name", []string{"list", "-o", "name"}},
		{"list.noheaders", []string{"list", "--no-headers"}},
		{"status.table", []string{"status"}},
		{"status.json", []string{"status", "-o", "json"}},
		{"status.yaml", []string{"status", "-o", "yaml"}},
		{"events.table", []string{"events", "worker-7"}},
		{"events.json", []string{"events", "worker-7", "-o", "json"}},
		{"events.yaml", []string{"events", "worker-7", "-o", "yaml"}},
		{"create.json", []string{"create", "extra", "-o", "json"}},
		{"delete.table", []string{"delete", "extra"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			golden(t, c.name, mustRun(t, store, c.args...))
		})
	}
}

// TestStatusJSONShape pins the documented contract of `status -o json`
// (slept_by: docs/sleep.md).
func TestStatusJSONShape(t *testing.T) {
	store := fixture(t)
	out := mustRun(t, store, "status", "-o", "json", "worker-7")
	require.JSONEq(t, `{"spores":[{"id":"worker-7","colony":"lab","rank":"spore","desired":"Paused",
		"observed":{"pod":"Absent","bridge":"Down","activity":"","restarts":0,"reason":""},"effective":"Paused","reason":"asleep: by a person","slept_by":"person","last_seq":1}]}`, out)
}

func TestExitCodes(t *testing.T) {
	store := fixture(t)
	newer := filepath.Join(t.TempDir(), "newer")
	mustRun(t, newer, "init")
	require.NoError(t, os.WriteFile(filepath.Join(newer, "FORMAT"), []byte("sporectl store\nformat 99\n"), 0o600))
	kubeStore := filepath.Join(t.TempDir(), "kube")
	mustRun(t, kubeStore, "init", "--runtime", "kube")
	mustRun(t, kubeStore, "create", "k")
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "no-such-kubeconfig"))
	notStore := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(notStore, "notes.txt"), []byte("mine"), 0o600))

	cases := []struct {
		name  string
		store string
		args  []string
		code  int
		msg   string
	}{
		{"ok", store, []string{"list"}, ExitOK, ""},
		{"invalid id", store, []string{"create", "Bad_Id"}, ExitUsage, `invalid spore id "Bad_Id"`},
		{"id too long", store, []string{"create", strings.Repeat("a", 58)}, ExitUsage, "at most 57"},
		{"unknown flag", store, []string{"list", "--frobnicate"}, ExitUsage, "unknown flag: --frobnicate"},
		{"unknown command", store, []string{"frobnicate"}, ExitUsage, `unknown command "frobnicate"`},
		{"unknown output", store, []string{"list", "-o", "xml"}, ExitUsage, `unknown output format "xml"`},
		{"bad rank", store, []string{"create", "x", "--rank", "king"}, ExitUsage, "--rank"},
		{"bad quantity", store, []string{"create", "x", "--memory", "lots"}, ExitUsage, "--memory"},
		{"role without swarm", store, []string{"create", "x", "--role", "r"}, ExitUsage, "--role needs --swarm"},
		{"missing args", store, []string{"events"}, ExitUsage, "takes 1 spore id"},
		{"not found", store, []string{"events", "ghost"}, ExitNotFound, "spore ghost: not found"},
		{"exists", store, []string{"create", "worker-7"}, ExitConflict, "already exists"},
		{"second arch", store, []string{"create", "arch-2", "--rank", "arch"}, ExitConflict, "arch mycologist"},
		{"no store", filepath.Join(t.TempDir(), "none"), []string{"list"}, ExitStore, "no store here"},
		{"not a store", notStore, []string{"list"}, ExitStore, "no store here"},
		{"init over non-store", notStore, []string{"init"}, ExitStore, "refusing to write into it"},
		{"newer format", newer, []string{"list"}, ExitIncompatible, "format version 99"},
		{"bad runtime", store, []string{"init", "--runtime", "vm"}, ExitUsage, "--runtime"},
		{"no cluster", kubeStore, []string{"wake", "k"}, ExitRuntime, "load cluster config"},
	}
	// A wish is recorded before the runtime is asked, so the next command
	// carries on from it (docs/cli.md): that failure changes the store.
	recordsWish := map[string]bool{"no cluster": true}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := treeHash(t, c.store)
			r := run(t, c.store, c.args...)
			require.Equal(t, c.code, r.code, "stderr: %s", r.err)
			require.Contains(t, r.err, c.msg)
			if c.code != ExitOK && !recordsWish[c.name] {
				require.Equal(t, before, treeHash(t, c.store), "a failed command changed the store")
				require.Empty(t, r.out, "a failed command printed data")
			}
		})
	}
}

func TestCheckReportsCorruption(t *testing.T) {
	store := fixtureToDamage(t)
	require.Equal(t, ExitOK, run(t, store, "check").code)
	// Hand-edit the spore's event log: the line keeps its shape but no
	// longer matches its checksum.
	logs, err := filepath.Glob(filepath.Join(store, "events", "worker-7.*.log"))
	require.NoError(t, err)
	require.Len(t, logs, 1)
	b, err := os.ReadFile(logs[0])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(logs[0], bytes.Replace(b, []byte("Paused"), []byte("Active"), 1), 0o600))
	before := treeHash(t, store)
	r := run(t, store, "check")
	require.Equal(t, ExitCorrupt, r.code)
	require.Contains(t, r.out, "events/"+filepath.Base(logs[0])+":1")
	require.Contains(t, r.out, "checksum mismatch")
	r = run(t, store, "events", "worker-7")
	require.Equal(t, ExitCorrupt, r.code)
	require.Contains(t, r.err, filepath.Base(logs[0])+":1")
	require.Equal(t, before, treeHash(t, store), "nothing repairs by overwriting")
}

func TestHelpTouchesNothing(t *testing.T) {
	store := filepath.Join(t.TempDir(), "never")
	for _, args := range [][]string{{"--help"}, {"status", "--help"}, {"completion", "bash"}, {"version"}, {"--version"}} {
		r := run(t, store, args...)
		require.Equal(t, ExitOK, r.code, "%v: %s", args, r.err)
		require.NotEmpty(t, r.out)
		_, err := os.Stat(store)
		require.ErrorIs(t, err, fs.ErrNotExist, "%v created the store", args)
	}
}

func TestInitIsIdempotentAndConfigures(t *testing.T) {
	store := filepath.Join(t.TempDir(), "s")
	require.Regexp(t, "^store "+regexp.QuoteMeta(store)+" created\nspo_[A-Za-z0-9_-]+\n$", mustRun(t, store, "init"), "the store, then its first operator's token")
	require.Equal(t, "store "+store+" unchanged\n", mustRun(t, store, "init"), "no second token")
	require.Equal(t, "store "+store+" configured\n", mustRun(t, store, "init", "--agent", "echo"))
	mustRun(t, store, "create", "a")
	out := mustRun(t, store, "list", "-o", "json")
	require.Contains(t, out, `"memory": "3Gi"`, "store defaults fill the spec")
}

// treeHash summarises every file's path, mode and contents under root.
func treeHash(t *testing.T, root string) string {
	t.Helper()
	h := sha256.New()
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		h.Write([]byte(p))
		if !d.IsDir() {
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			h.Write(b)
		}
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))
}

// TestVersionFlag: --version prints what the version command prints.
func TestVersionFlag(t *testing.T) {
	store := filepath.Join(t.TempDir(), "never")
	want := mustRun(t, store, "version")
	require.True(t, strings.HasPrefix(want, "sporectl "+version+" ("), want)
	for _, args := range [][]string{{"--version"}, {"-v", "--version"}} {
		r := run(t, store, args...)
		require.Equal(t, ExitOK, r.code, "%v: %s", args, r.err)
		require.Equal(t, want, r.out, "%v", args)
	}
}
