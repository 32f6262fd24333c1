package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Bad flags exit 2 naming the flag; a build that fails exits 1 saying
// why; neither writes an archive.
func TestMkimagesExitCodes(t *testing.T) {
	out := t.TempDir()
	bin := "/bin/true" // dynamically linked: refused by the builder
	_, err := os.Stat(bin)
	require.NoError(t, err)
	for _, tc := range []struct {
		name  string
		args  []string
		epoch string
		code  int
		want  string
	}{
		{"no binary", []string{"-out", out}, "", 2, "-sporectl is required"},
		{"unknown image", []string{"-out", out, "-sporectl", bin, "-images", "busybox"}, "", 2, `invalid value "busybox" for -images`},
		{"spore without its inputs", []string{"-out", out, "-sporectl", bin, "-images", "spore", "-rootfs", "r.tar", "-claude-code", "c.tgz", "-claude-code-native", "n.tgz"}, "", 2, "-claude-code-version is required"},
		{"bad epoch", []string{"-out", out, "-sporectl", bin}, "yesterday", 2, `invalid SOURCE_DATE_EPOCH "yesterday"`},
		{"an argument", []string{"-out", out, "-sporectl", bin, "extra"}, "", 2, `unexpected argument "extra"`},
		{"unknown flag", []string{"-nope"}, "", 2, "-nope"},
		{"a dynamic binary", []string{"-out", out, "-sporectl", bin, "-images", "sporectl"}, "", 1, "CGO_ENABLED=0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			env := func(k string) string {
				if k == "SOURCE_DATE_EPOCH" {
					return tc.epoch
				}
				return ""
			}
			code := run(context.Background(), tc.args, &stdout, &stderr, env)
			assert.Equal(t, tc.code, code, stderr.String())
			assert.Contains(t, stderr.String(), tc.want)
			assert.Empty(t, stdout.String())
			left, err := filepath.Glob(filepath.Join(out, "*"))
			require.NoError(t, err)
			assert.Empty(t, left)
		})
	}
}
