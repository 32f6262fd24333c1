package pgstore_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/pgstore"
	"github.com/sporectl/sporectl/state/storetest"
)

// The multi-process test re-executes this test binary as writer
// processes; these variables carry their orders.
const (
	helperEnv    = "SPORECTL_PGSTORE_HELPER" // the writer's number
	helperURLEnv = "SPORECTL_PGSTORE_HELPER_URL"
)

var helperSpores = []string{"a", "b", "c"}

const helperRounds, helperBatch = 20, 7

// runHelper is a writer process: it appends helperRounds batches, each to
// one of helperSpores, every batch in its own Update.
func runHelper() int {
	w, _ := strconv.Atoi(os.Getenv(helperEnv))
	ctx := context.Background()
	s, err := pgstore.Open(ctx, os.Getenv(helperURLEnv), pgstore.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "writer:", err)
		return 1
	}
	defer s.Close()
	for r := 0; r < helperRounds; r++ {
		id := helperSpores[(w+r)%len(helperSpores)]
		err := s.Update(ctx, func(tx state.Tx) error {
			_, err := tx.Append(ctx, id, prompts(fmt.Sprintf("p%d r%d", w, r), helperBatch))
			return err
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "writer:", err)
			return 1
		}
	}
	return 0
}

// TestConcurrentWriterProcesses: several processes, each with its own pool,
// append to the same spores at once. Per spore the sequence is gapless,
// nothing is lost or duplicated, and Check is clean.
func TestConcurrentWriterProcesses(t *testing.T) {
	s, url := newStoreURL(t)
	ctx := context.Background()
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		for _, id := range helperSpores {
			if err := tx.CreateSpore(ctx, storetest.Spore(id)); err != nil {
				return err
			}
		}
		return nil
	}))
	const procs = 4
	cmds := make([]*exec.Cmd, procs)
	outs := make([]*strings.Builder, procs)
	for w := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), helperEnv+"="+strconv.Itoa(w), helperURLEnv+"="+url)
		outs[w] = &strings.Builder{}
		cmd.Stdout, cmd.Stderr = outs[w], outs[w]
		require.NoError(t, cmd.Start())
		cmds[w] = cmd
	}
	for w, cmd := range cmds {
		require.NoError(t, cmd.Wait(), "writer %d: %s", w, outs[w])
	}
	seen := map[string]bool{}
	total := 0
	for _, id := range helperSpores {
		evs, _ := readAll(t, s, id)
		for i, e := range evs {
			require.Equal(t, uint64(i+1), e.Seq, "spore %s is gapless", id)
			require.False(t, seen[e.Text], "duplicate %q", e.Text)
			seen[e.Text] = true
		}
		total += len(evs)
	}
	require.Equal(t, procs*helperRounds*helperBatch, total)
	requireClean(t, s)
}
