package agent

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Each agent names itself by its kind, so a bridge's log and its
// --agent flag agree.
func TestKinds(t *testing.T) {
	require.Equal(t, []string{KindClaude, KindEcho}, Kinds())
	require.Equal(t, KindClaude, Default)
	require.Equal(t, KindClaude, (&Claude{}).Name())
	require.Equal(t, KindEcho, Echo{}.Name())
	for _, k := range Kinds() {
		require.True(t, ValidKind(k), k)
	}
	for _, k := range []string{"", "gpt", "Claude", " echo"} {
		require.False(t, ValidKind(k), "%q", k)
	}
}
