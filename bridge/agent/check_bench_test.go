package agent

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkCheckBin is what the bridge's start check of its agent costs
// (docs/bridge.md): a stat of a named path, a $PATH walk for a bare name.
func BenchmarkCheckBin(b *testing.B) {
	dir := b.TempDir()
	exe := filepath.Join(dir, "claude")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		b.Fatal(err)
	}
	b.Run("path", func(b *testing.B) {
		for b.Loop() {
			if err := CheckBin(KindClaude, exe); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:"+dir)
	b.Run("bare name on PATH", func(b *testing.B) {
		for b.Loop() {
			if err := CheckBin(KindClaude, "claude"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
