package storecopy_test

import (
	"testing"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

func dirBackend() backend {
	return backend{"dir", func(t *testing.T) state.Store { return statetest.Dir(t, state.Settings{Runtime: "local"}) }}
}

func backends() []backend { return []backend{dirBackend(), pgBackend()} }
