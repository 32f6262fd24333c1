package state_test

import (
	"go/ast"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/internal/testutil/golint"
)

// TestOnlyUpdateStatusWritesAStatus is a lint: no code calls
// Tx.PutStatus but state.UpdateStatus, so every status write reads the
// record fresh, is made at its wish's generation and is skipped when it
// changes nothing. Tests (_test.go) are not read: they set up records as
// they need them.
//
// The backends (state/dirstore, state/pgstore) are not exempt: they
// implement PutStatus, and their own status write (repair clearing a
// damage mark) goes through UpdateStatus like any other.
func TestOnlyUpdateStatusWritesAStatus(t *testing.T) {
	found := golint.Find(t, golint.Exempt{
		"state/updatestatus.go": "the one writer itself",
		"state/storetest/":      "the stores' contract suite, which tests PutStatus as the backends implement it (refusals included, which UpdateStatus never makes)",
	}, func(_ *golint.File, n ast.Node) bool { return golint.IsCall(n, "PutStatus") })
	require.Empty(t, found, "a status is written only by state.UpdateStatus (state/updatestatus.go)")
}
