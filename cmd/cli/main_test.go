package cli

import (
	"os"
	"testing"

	"github.com/sporectl/sporectl/state/pgstore/pgtest"
)

// TestMain stops the PostgreSQL server that the tests on both stores
// start the first time one asks (pgtest.Lazy).
func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopLazy()
	os.Exit(code)
}
