package pgstore_test

import (
	"os"
	"testing"

	"github.com/sporectl/sporectl/state/pgstore/pgtest"
)

func TestMain(m *testing.M) {
	// A re-executed copy of this binary acting as a writer process (see
	// helper_test.go) needs no server of its own.
	if os.Getenv(helperEnv) != "" {
		os.Exit(runHelper())
	}
	os.Exit(pgtest.Main(m))
}
