package agent

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCheckBin(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "claude")
	require.NoError(t, os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755))
	plain := filepath.Join(dir, "plain")
	require.NoError(t, os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644))
	t.Setenv("PATH", dir)
	cases := []struct {
		name, bin, want string
	}{
		{"executable path", exe, ""},
		{"bare name on PATH", "claude", ""},
		{"missing path", filepath.Join(dir, "nope"), "claude: not found at " + filepath.Join(dir, "nope")},
		{"bare name not on PATH", "claude-nowhere", `claude: exec: "claude-nowhere": executable file not found in $PATH`},
		{"not executable", plain, "claude: " + plain + " is not executable (mode 0644)"},
		{"a directory", dir, "claude: " + dir + " is a directory, not an executable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckBin(KindClaude, tc.bin)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tc.want)
		})
	}
}
