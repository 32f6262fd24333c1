package storecopy_test

import (
	"os"
	"testing"

	"github.com/sporectl/sporectl/state/pgstore/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }
