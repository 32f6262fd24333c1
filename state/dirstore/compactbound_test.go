package dirstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

func TestCompactAt(t *testing.T) {
	for _, tc := range []struct {
		name      string
		set, snap int64
		want      int64
	}{
		{"a small snapshot: the floor", 0, 10 << 10, 64 << 10},
		{"a snapshot between the bounds: its size", 0, 100 << 10, 100 << 10},
		{"a large snapshot: the bound, not its size", 0, 3 << 20, 256 << 10},
		{"Options.CompactBytes wins", 4096, 3 << 20, 4096},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, compactAt(tc.set, tc.snap))
		})
	}
}

// boundLog makes the bounds of the commit log small enough for a test's
// store: a snapshot of a few hundred spores is then far past the bound.
func boundLog(t *testing.T, lo, hi int64) {
	oldMin, oldMax := minCompactBytes, maxCompactBytes
	minCompactBytes, maxCompactBytes = lo, hi
	t.Cleanup(func() { minCompactBytes, maxCompactBytes = oldMin, oldMax })
}

// TestLogIsBoundedWhateverTheSnapshot: in a store whose snapshot is many
// times the bound, the live commit log never holds more than the bound
// and the record that crossed it, so loading the state costs the same
// however many spores there are (format §7) — and what the compactions
// wrote reads back as written, by fresh handles that find rows by
// bisection, and check finds nothing.
func TestLogIsBoundedWhateverTheSnapshot(t *testing.T) {
	ctx := context.Background()
	bisectSmall(t)
	boundLog(t, 1<<10, 8<<10)
	root := fleetStore(t, 300)
	snap, err := os.Stat(filepath.Join(root, snapshotFile))
	require.NoError(t, err)
	require.Greater(t, snap.Size(), int64(8*(8<<10)), "the snapshot is many times the bound")

	s := openFresh(t, root, Options{})
	l, err := s.loadState(ctx)
	require.NoError(t, err)
	gen0 := l.m.gen
	want := map[string]uint64{}
	for round := range 60 {
		before, err := s.loadState(ctx)
		require.NoError(t, err)
		require.NoError(t, touchIDs(ctx, s, round, 3, want))
		after, err := unloaded(root).loadState(ctx)
		require.NoError(t, err)
		record := after.logOff - before.logOff
		if after.m.gen != before.m.gen {
			record = 0 // compacted: the log holds its header only
			require.Equal(t, int64(headerSize), after.logOff)
		}
		require.LessOrEqual(t, after.logOff, maxCompactBytes+record, "round %d: the log is past the bound and the record that crossed it", round)
	}
	l, err = unloaded(root).loadState(ctx)
	require.NoError(t, err)
	require.GreaterOrEqual(t, l.m.gen-gen0, uint64(5), "60 commits of about 900 bytes each compact a log bounded at 8 KiB several times")

	fresh := openFresh(t, root, Options{})
	for id, g := range want {
		require.NoError(t, fresh.View(ctx, func(tx state.Tx) error {
			sp, err := tx.Spore(ctx, id)
			if err == nil && sp.Wish.Generation != g {
				err = fmt.Errorf("%s: generation %d, want %d", id, sp.Wish.Generation, g)
			}
			return err
		}))
	}
	rep, err := fresh.Check(ctx)
	require.NoError(t, err)
	require.Empty(t, rep.Problems)
}

// TestLogPastTheBoundWhenCompactionFails: a compaction that fails (here
// the new commit log's fsync, as a full disk would) leaves the commit
// committed and the log past the bound, every row readable; the next
// commit compacts it.
func TestLogPastTheBoundWhenCompactionFails(t *testing.T) {
	ctx := context.Background()
	bisectSmall(t)
	boundLog(t, 1<<10, 4<<10)
	root := fleetStore(t, 200)
	logger, logs := logBuffer()
	s := openFresh(t, root, Options{Logger: logger})
	l, err := s.loadState(ctx)
	require.NoError(t, err)
	gen0 := l.m.gen
	next := txlogName(gen0 + 1)
	failed := 0
	setSyncFile(t, func(f *os.File) error {
		if filepath.Base(f.Name()) == next && failed == 0 {
			failed++
			return syscall.ENOSPC
		}
		return f.Sync()
	})

	want := map[string]uint64{}
	for round := 0; failed == 0; round++ {
		require.Less(t, round, 50, "the log never reached the bound")
		require.NoError(t, touchIDs(ctx, s, round, 3, want), "a failed compaction fails no commit")
	}
	l, err = unloaded(root).loadState(ctx)
	require.NoError(t, err)
	require.Equal(t, gen0, l.m.gen, "not compacted")
	require.Greater(t, l.logOff, maxCompactBytes)
	require.Contains(t, logs.String(), "compaction failed")
	requireGenerations(t, root, want)

	require.NoError(t, touchIDs(ctx, s, 99, 1, want))
	l, err = unloaded(root).loadState(ctx)
	require.NoError(t, err)
	require.Equal(t, gen0+1, l.m.gen, "the next commit compacts")
	require.Equal(t, int64(headerSize), l.logOff)
	requireGenerations(t, root, want)
}

// touchIDs rewrites the wishes of k of fleetStore's spores from the
// k×round-th on (a record of about k×300 bytes), one generation higher,
// and notes the generations in want.
func touchIDs(ctx context.Context, s *Store, round, k int, want map[string]uint64) error {
	ids := make([]string, k)
	for i := range ids {
		ids[i] = fmt.Sprintf("s-%04d", (round*k+i)%200)
	}
	gens := map[string]uint64{}
	err := s.Update(ctx, func(tx state.Tx) error {
		for _, id := range ids {
			sp, err := tx.Spore(ctx, id)
			if err != nil {
				return err
			}
			w := sp.Wish
			w.Generation++
			if err := tx.PutWish(ctx, w); err != nil {
				return err
			}
			gens[id] = w.Generation
		}
		return nil
	})
	if err == nil {
		for id, g := range gens {
			want[id] = g
		}
	}
	return err
}

func requireGenerations(t *testing.T, root string, want map[string]uint64) {
	t.Helper()
	ctx := context.Background()
	fresh := openFresh(t, root, Options{})
	require.NoError(t, fresh.View(ctx, func(tx state.Tx) error {
		for id, g := range want {
			sp, err := tx.Spore(ctx, id)
			if err != nil {
				return err
			}
			if sp.Wish.Generation != g {
				return fmt.Errorf("%s: generation %d, want %d", id, sp.Wish.Generation, g)
			}
		}
		return nil
	}))
}
