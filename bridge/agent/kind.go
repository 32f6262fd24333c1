package agent

import "slices"

// The kinds of agent a bridge runs, by the names that `sporectl bridge
// --agent`, the store's settings and both runtimes use for them.
const (
	// KindClaude is Claude Code (Claude).
	KindClaude = "claude"
	// KindEcho is the built-in demo agent (Echo).
	KindEcho = "echo"
	// Default is the kind to run when none is named.
	Default = KindClaude
)

// Kinds lists every kind, Default first.
func Kinds() []string { return []string{KindClaude, KindEcho} }

// ValidKind reports whether kind is one of Kinds.
func ValidKind(kind string) bool { return slices.Contains(Kinds(), kind) }
