package fakeapi

import (
	"os"
	"testing"
)

// ClaudeBin is the real Claude Code that tests run against this fake,
// from $SPORECTL_CLAUDE_BIN (.ci/claude-code.sh installs it). Without it
// the test is skipped — except with $CI set, where it fails.
func ClaudeBin(tb testing.TB) string {
	tb.Helper()
	bin := os.Getenv("SPORECTL_CLAUDE_BIN")
	if bin == "" {
		if os.Getenv("CI") != "" {
			tb.Fatal("CI is set but SPORECTL_CLAUDE_BIN is not: export SPORECTL_CLAUDE_BIN=$(bash .ci/claude-code.sh)")
		}
		tb.Skip("SPORECTL_CLAUDE_BIN is not set (export SPORECTL_CLAUDE_BIN=$(bash .ci/claude-code.sh))")
	}
	if _, err := os.Stat(bin); err != nil {
		tb.Fatalf("SPORECTL_CLAUDE_BIN: %v", err)
	}
	return bin
}

// ClaudeEnv points Claude Code at the fake served at url.
func ClaudeEnv(url string) []string {
	return []string{
		"ANTHROPIC_BASE_URL=" + url,
		"ANTHROPIC_API_KEY=sk-fake-for-tests",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
	}
}
