package podgrammar_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/internal/testutil/golint"
)

// TestImportsNothing: state checks every record with this grammar, and
// state may import neither the kube runtime (which imports state) nor
// Kubernetes' libraries, so this package imports nothing of this module
// and nothing of Kubernetes (docs/architecture.md).
func TestImportsNothing(t *testing.T) {
	const pkg = golint.Module + "/kube/podgrammar"
	for _, d := range golint.Deps(t, "kube/podgrammar") {
		require.False(t, d != pkg && strings.HasPrefix(d, golint.Module+"/"), "kube/podgrammar imports %s", d)
		require.False(t, strings.HasPrefix(d, "k8s.io/"), "kube/podgrammar imports Kubernetes (%s)", d)
	}
}
