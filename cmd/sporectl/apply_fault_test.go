package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state/pgstore/pgtest"
	"github.com/sporectl/sporectl/state/statetest"
)

// faultColonySize is the colony each killed apply writes: large enough
// that the kill lands inside its one transaction most of the time.
const faultColonySize = 1000

// TestApplyKilledIsAllOrNothing SIGKILLs `sporectl apply` of a
// 1,000-spore colony at random moments, on both stores. After each kill
// check is clean and the colony is in the store whole or not at all;
// applying it again then completes it, and once more changes nothing.
func TestApplyKilledIsAllOrNothing(t *testing.T) {
	t.Run("dir", func(t *testing.T) {
		store := filepath.Join(t.TempDir(), "store")
		statetest.CheckDirOnCleanup(t, store)
		applyKilled(t, store)
	})
	t.Run("pg", func(t *testing.T) {
		url := pgtest.NewDatabase(t) // skips without PostgreSQL, fails in CI
		statetest.CheckPostgresOnCleanup(t, url)
		applyKilled(t, url)
	})
}

func applyKilled(t *testing.T, store string) {
	runOK(t, store, "init", "--no-operator", "--agent", "echo")
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	dir := t.TempDir()

	// The first apply, not killed, says how long one takes.
	start := time.Now()
	runOK(t, store, "apply", "-f", writeFaultColony(t, dir, "whole"))
	full := time.Since(start)
	t.Logf("an apply of %d spores took %s", faultColonySize, full)

	killed, committed := 0, 0
	const n = 10
	for i := range n {
		colony := fmt.Sprintf("c%d", i)
		file := writeFaultColony(t, dir, colony)
		// Up to half again as long: some land after the commit, or after the
		// exit.
		delay := time.Duration(rng.Int64N(int64(full + full/2)))
		res, wasKilled := storeRig(t, store).runKilledAfter(delay, "apply", "-f", file)
		if wasKilled {
			killed++
		} else {
			require.Equal(t, 0, res.code, "apply %s failed on its own: %s", colony, res)
		}
		runOK(t, store, "check")
		got := colonySpores(t, store, colony)
		require.Contains(t, []int{0, faultColonySize}, got, "apply %s (killed: %v after %s): the colony is in the store whole or not at all", colony, wasKilled, delay)
		if got > 0 {
			committed++
		}
		runOK(t, store, "apply", "-f", file)
		require.Equal(t, faultColonySize, colonySpores(t, store, colony))
		out := runOK(t, store, "apply", "-f", file, "-o", "json")
		require.NotContains(t, string(out), `"created"`, "applied whole: nothing left to create")
	}
	t.Logf("%d of %d applies SIGKILLed; %d of them had committed", killed, n, committed-(n-killed))
	require.Positive(t, killed, "no apply was killed: the delays are too long")
}

// writeFaultColony writes colony's document of faultColonySize spores,
// in swarms of 10 with a role each.
func writeFaultColony(t *testing.T, dir, colony string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: sporectl/v1\nkind: Colony\nmetadata: {name: %s}\nspec:\n  defaults: {resources: {cpu: '1', memory: 2Gi}}\n  spores:\n", colony)
	for i := range faultColonySize {
		fmt.Fprintf(&b, "  - {id: %s-%04d, swarm: s%d, role: r}\n", colony, i, i%10)
	}
	p := filepath.Join(dir, colony+".yaml")
	require.NoError(t, os.WriteFile(p, []byte(b.String()), 0o644))
	return p
}

// colonySpores is how many spores the store holds in colony.
func colonySpores(t *testing.T, store, colony string) int {
	var list struct {
		Spores []struct{ ID string } `json:"spores"`
	}
	require.NoError(t, json.Unmarshal(runOK(t, store, "list", "--colony", colony, "-o", "json"), &list))
	return len(list.Spores)
}
