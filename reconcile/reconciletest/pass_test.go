package reconciletest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// fatalTB records a Fatal instead of ending the test.
type fatalTB struct {
	testing.TB
	fatal string
}

func (f *fatalTB) Helper()           {}
func (f *fatalTB) Fatal(args ...any) { f.fatal = fmt.Sprint(args...) }

func TestNewPassDefaultsAndOptions(t *testing.T) {
	st := statetest.Dir(t, state.Settings{Runtime: "local"})
	rt := reconciletest.New()

	ps := reconciletest.NewPass(t, st, reconciletest.WithFake(rt))
	require.Same(t, st, ps.Store)
	require.NotNil(t, ps.Dial, "the fake's bridges are dialled in memory")
	require.Equal(t, reconciletest.Epoch, ps.Now(), "a fixed clock unless told")
	require.NotNil(t, ps.Logger)
	got, err := ps.Runtime(t.Context(), state.Settings{})
	require.NoError(t, err)
	require.Same(t, rt, got)

	ps = reconciletest.NewPass(t, st, reconciletest.WithRuntime(rt), reconciletest.RealClock())
	require.Nil(t, ps.Dial, "another runtime's bridges are dialled over HTTP")
	require.Nil(t, ps.Now, "the pass's own wall clock")

	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	require.Equal(t, at, reconciletest.NewPass(t, st, reconciletest.WithFake(rt), reconciletest.At(at)).Now())

	tb := &fatalTB{TB: t}
	reconciletest.NewPass(tb, st)
	require.Contains(t, tb.fatal, "no runtime", "a pass without a runtime is the test's mistake, said at once")
}
