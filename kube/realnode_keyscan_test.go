package kube_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Where a secret could be read on the node: the processes' environments
// and command lines (a container's processes are host processes under
// containerd and runc) and the files of a directory (a local volume's
// host directory). Each says where it found the secret, never the secret.

// procsHolding lists the host's processes whose environment or command
// line holds secret, with what each is. A process that ends while it is
// read is left out: it holds nothing any more.
func procsHolding(t *testing.T, secret string) map[int]string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	out := map[int]string{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		for _, f := range []string{"environ", "cmdline"} {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/%s", pid, f))
			if err == nil && bytes.Contains(b, []byte(secret)) {
				out[pid] = procComm(pid) + " (" + f + ")"
			}
		}
	}
	return out
}

// procsWithEnv lists the host's processes whose environment has kv
// (NAME=value) among its variables.
func procsWithEnv(t *testing.T, kv string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		for _, v := range environ(pid) {
			if v == kv {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

func procComm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}

// environ is a process's environment, one NAME=value a string; nil when
// the process is gone.
func environ(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// envValue is the value of name in env, and whether it is set.
func envValue(env []string, name string) (string, bool) {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// filesHolding walks root (symbolic links not followed) and lists the
// files whose name or content holds secret, and how many files it read.
func filesHolding(t *testing.T, root, secret string) (found []string, read int) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("walk %s: %w", p, err)
		}
		if strings.Contains(d.Name(), secret) {
			found = append(found, p+" (its name)")
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		read++
		if bytes.Contains(b, []byte(secret)) {
			found = append(found, p)
		}
		return nil
	})
	require.NoError(t, err)
	return found, read
}
