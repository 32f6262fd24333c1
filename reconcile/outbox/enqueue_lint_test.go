package outbox

import (
	"go/ast"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/internal/testutil/golint"
)

// TestEveryMessageIsRecordedHere: an outbox entry is queued (Tx.Enqueue)
// by record alone, so a prompt from the CLI, the page, serve's routes, a
// loop or a summons is admitted, framed, judged and recorded the same
// way. Only the stores, which implement Enqueue, and tests call it
// elsewhere.
func TestEveryMessageIsRecordedHere(t *testing.T) {
	found := golint.Find(t, golint.Exempt{"state/": "the stores implement Enqueue"}, func(_ *golint.File, n ast.Node) bool {
		return golint.IsCall(n, "Enqueue")
	})
	callers := make([]string, len(found))
	for i, at := range found {
		callers[i], _, _ = strings.Cut(at, ":")
	}
	require.Equal(t, []string{"reconcile/outbox/record.go"}, callers, "Tx.Enqueue is called by record alone: %v", found)
}
