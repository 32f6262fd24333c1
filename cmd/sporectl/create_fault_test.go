package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state/pgstore/pgtest"
	"github.com/sporectl/sporectl/state/statetest"
)

// faultCreateIDs is how many ids each killed create names: enough that
// the kill lands inside its one transaction most of the time.
const faultCreateIDs = 5000

// TestCreateManyKilledIsAllOrNothing SIGKILLs `sporectl create ID…` of
// 5,000 ids at random moments, on both stores. After each kill check is
// clean and the ids are in the store all or none; creating them again
// then creates them all, or, when they were, is refused (exit 5) and
// changes nothing.
func TestCreateManyKilledIsAllOrNothing(t *testing.T) {
	t.Run("dir", func(t *testing.T) {
		store := filepath.Join(t.TempDir(), "store")
		statetest.CheckDirOnCleanup(t, store)
		createKilled(t, store)
	})
	t.Run("pg", func(t *testing.T) {
		url := pgtest.NewDatabase(t) // skips without PostgreSQL, fails in CI
		statetest.CheckPostgresOnCleanup(t, url)
		createKilled(t, url)
	})
}

func createKilled(t *testing.T, store string) {
	runOK(t, store, "init", "--no-operator", "--agent", "echo")
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	args := func(colony string) []string {
		a := []string{"create", "--colony", colony}
		for i := range faultCreateIDs {
			a = append(a, fmt.Sprintf("%s-%04d", colony, i))
		}
		return a
	}

	// The first create, not killed, says how long one takes.
	start := time.Now()
	runOK(t, store, args("whole")...)
	full := time.Since(start)
	t.Logf("a create of %d spores took %s", faultCreateIDs, full)

	killed, committed := 0, 0
	const n = 6
	for i := range n {
		colony := fmt.Sprintf("c%d", i)
		// Up to half again as long as the last create took: some land
		// after the commit, or after the exit. The last two tries, when
		// no kill has landed yet (a loaded machine makes the first create
		// slow, the later ones fast), land early, so the test always
		// kills at least one.
		delay := time.Duration(rng.Int64N(int64(full + full/2)))
		if killed == 0 && i >= n-2 {
			delay = full/8 + time.Duration(rng.Int64N(int64(full/4)))
		}
		began := time.Now()
		res, wasKilled := storeRig(t, store).runKilledAfter(delay, args(colony)...)
		if wasKilled {
			killed++
		} else {
			require.Equal(t, 0, res.code, "create %s failed on its own: %s", colony, res)
			if time.Since(began) < delay {
				full = time.Since(began)
			}
		}
		runOK(t, store, "check")
		got := colonySpores(t, store, colony)
		require.Contains(t, []int{0, faultCreateIDs}, got, "create %s (killed: %v after %s): all or none", colony, wasKilled, delay)
		if got == 0 {
			runOK(t, store, args(colony)...)
		} else {
			committed++
			err := sporectl(store, args(colony)...).Run()
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "a create of ids that exist is refused: %v", err)
			require.Equal(t, 5, exit.ExitCode(), "exit 5 (Conflict)")
		}
		require.Equal(t, faultCreateIDs, colonySpores(t, store, colony))
		runOK(t, store, "check")
	}
	t.Logf("%d of %d creates SIGKILLed; %d of them had committed", killed, n, committed-(n-killed))
	require.Positive(t, killed, "no create was killed: the delays are too long")
}
