package dirstore

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/storetest"
)

// Event logs no committed row names — a deleted spore's conversation whose
// removal did not run, a create that failed or crashed — are removed by the
// next writer (format §4): never one a committed row names, and check notes
// each until then.

func eventFiles(t *testing.T, root string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(root, eventsDir))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func orphanNotes(rep *state.CheckReport) []string {
	var out []string
	for _, n := range rep.Notes {
		if strings.Contains(n.Message, "no spore names") {
			out = append(out, n.Where)
		}
	}
	return out
}

// crashAt runs fn on a fresh handle and "kills" the writer at failpoint
// at: the rest of the commit never runs, as after a SIGKILL.
func crashAt(t *testing.T, root, at string, fn func(tx state.Tx) error) {
	t.Helper()
	type crash struct{}
	setFailpoint(t, func(name string) {
		if name == at {
			panic(crash{})
		}
	})
	defer setFailpoint(t, func(string) {})
	defer func() {
		r := recover()
		if _, ok := r.(crash); !ok {
			panic(r)
		}
	}()
	_ = unloaded(root).Update(context.Background(), fn)
	t.Fatalf("the writer survived its crash at %s", at)
}

func appendOne(id, text string) func(tx state.Tx) error {
	return func(tx state.Tx) error {
		_, err := tx.Append(context.Background(), id, []state.Event{{Kind: state.KindPrompt, Text: text}})
		return err
	}
}

// TestDeletedSporesLogRemovedAfterCrash: a delete that committed but died
// before removing the spore's log leaves the conversation on disk; check
// notes it, and the next writer removes it.
func TestDeletedSporesLogRemovedAfterCrash(t *testing.T) {
	ctx := context.Background()
	root := populated(t)
	crashAt(t, root, "committed", func(tx state.Tx) error { return tx.DeleteSpore(ctx, "beta") })
	require.Contains(t, eventFiles(t, root), "beta.1.log", "the crash left the deleted spore's conversation")
	rep := requireSound(t, root)
	require.Equal(t, []string{eventsDir + "/beta.1.log"}, orphanNotes(rep))

	require.NoError(t, unloaded(root).Update(ctx, appendOne("alpha", "next writer")))
	require.Equal(t, []string{"alpha.1.log", "gamma.1.log"}, eventFiles(t, root))
	rep = requireSound(t, root)
	require.Empty(t, rep.Notes)
}

// TestFailedCreateLeavesNoLog: a create whose event log write hits a full
// disk removes the log it created, so even when the next transaction
// commits something else (another tx id) nothing is left behind.
func TestFailedCreateLeavesNoLog(t *testing.T) {
	ctx := context.Background()
	root := populated(t)
	s, err := Open(ctx, root, Options{})
	require.NoError(t, err)
	fired := 0
	restore := setWriteAt(t, halfWrite(func(p string) bool { return strings.HasPrefix(filepath.Base(p), "delta.") }, &fired))
	err = s.Update(ctx, func(tx state.Tx) error {
		if err := tx.CreateSpore(ctx, storetest.Spore("delta")); err != nil {
			return err
		}
		_, err := tx.Append(ctx, "delta", []state.Event{{Kind: state.KindLifecycle, Action: "created"}})
		return err
	})
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.Equal(t, 1, fired)
	restore()
	require.Equal(t, []string{"alpha.1.log", "beta.1.log", "gamma.1.log"}, eventFiles(t, root))
	require.NoError(t, s.Update(ctx, appendOne("alpha", "something else")))
	rep := requireSound(t, root)
	require.Empty(t, rep.Notes)
}

// TestCommitFailureRemovesCreatedLogs: a create whose events were written
// but whose commit record could not be (a full disk) removes its new log.
func TestCommitFailureRemovesCreatedLogs(t *testing.T) {
	ctx := context.Background()
	root := populated(t)
	s, err := Open(ctx, root, Options{})
	require.NoError(t, err)
	fired := 0
	restore := setWriteAt(t, halfWrite(isCommitLog, &fired))
	err = s.Update(ctx, func(tx state.Tx) error {
		if err := tx.CreateSpore(ctx, storetest.Spore("delta")); err != nil {
			return err
		}
		_, err := tx.Append(ctx, "delta", []state.Event{{Kind: state.KindLifecycle, Action: "created"}})
		return err
	})
	require.ErrorIs(t, err, syscall.ENOSPC)
	restore()
	require.NotContains(t, eventFiles(t, root), "delta.7.log")
	rep := requireSound(t, root)
	require.Empty(t, rep.Notes)
}

// TestCrashedCreateLogRemoved: a create that crashed after writing its
// spore's events (failpoint "events-written") leaves a log no row names;
// the next writer removes it, whatever it commits, and a later create of
// the same id starts a log of its own.
func TestCrashedCreateLogRemoved(t *testing.T) {
	ctx := context.Background()
	root := populated(t)
	create := func(tx state.Tx) error {
		if err := tx.CreateSpore(ctx, storetest.Spore("delta")); err != nil {
			return err
		}
		_, err := tx.Append(ctx, "delta", []state.Event{{Kind: state.KindLifecycle, Action: "created"}})
		return err
	}
	crashAt(t, root, "events-written", create)
	require.Contains(t, eventFiles(t, root), "delta.7.log")
	require.Equal(t, []string{eventsDir + "/delta.7.log"}, orphanNotes(requireSound(t, root)))

	require.NoError(t, unloaded(root).Update(ctx, appendOne("alpha", "x"))) // tx 7
	require.NotContains(t, eventFiles(t, root), "delta.7.log")
	require.NoError(t, unloaded(root).Update(ctx, create)) // tx 8
	require.Contains(t, eventFiles(t, root), "delta.8.log")
	d := mustDump(t, unloaded(root))
	require.Len(t, d.Events["delta"], 1)
	require.Empty(t, requireSound(t, root).Notes)
}

// TestSweepKeepsNamedLogs: the sweep never removes a log a committed row
// names — not one created and deleted and created again, not an empty
// one, not one of a spore this very transaction created — and leaves
// files that are not event logs alone.
func TestSweepKeepsNamedLogs(t *testing.T) {
	ctx := context.Background()
	root := populated(t)
	stray := filepath.Join(root, eventsDir, "README")
	require.NoError(t, os.WriteFile(stray, []byte("mine\n"), 0o600))
	orphan := filepath.Join(root, eventsDir, "old.2.log")
	require.NoError(t, os.WriteFile(orphan, []byte("1 x\n"), 0o600))
	// As a crashed writer leaves it: the marker says to sweep.
	require.NoError(t, os.WriteFile(filepath.Join(root, eventsDir, unsweptFile), nil, 0o600))
	before := mustDump(t, unloaded(root))

	s := unloaded(root)
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		// beta deleted and created again in one transaction; epsilon new.
		if err := tx.DeleteSpore(ctx, "beta"); err != nil {
			return err
		}
		for _, id := range []string{"beta", "epsilon"} {
			if err := tx.CreateSpore(ctx, storetest.Spore(id)); err != nil {
				return err
			}
			if _, err := tx.Append(ctx, id, []state.Event{{Kind: state.KindLifecycle, Action: "created"}}); err != nil {
				return err
			}
		}
		return nil
	}))
	require.Equal(t, []string{"README", "alpha.1.log", "beta.7.log", "epsilon.7.log", "gamma.1.log"}, eventFiles(t, root))
	after := mustDump(t, unloaded(root))
	require.Equal(t, before.Events["alpha"], after.Events["alpha"])
	require.Equal(t, before.Events["gamma"], after.Events["gamma"])
	require.Len(t, after.Events["beta"], 1, "the new beta does not meet its predecessor's bytes")
	rep := requireSound(t, root)
	require.Len(t, rep.Notes, 1)
	require.Equal(t, eventsDir+"/README", rep.Notes[0].Where)
	require.Contains(t, rep.Notes[0].Message, "left alone")
}

// TestSweepOnlyWhenMarked: a writer lists events/ only when the sweep
// marker is there. A log no row names that no writer of the store left
// (no marker: put there by hand) stays, noted by check, through a fresh
// handle's commit; with the marker the next fresh handle removes it and
// the marker. A create or a delete leaves no marker once committed.
func TestSweepOnlyWhenMarked(t *testing.T) {
	ctx := context.Background()
	root := populated(t)
	orphan := filepath.Join(root, eventsDir, "old.2.log")
	require.NoError(t, os.WriteFile(orphan, []byte("1 x\n"), 0o600))
	require.NoError(t, unloaded(root).Update(ctx, appendOne("alpha", "no marker")))
	require.FileExists(t, orphan)
	require.Equal(t, []string{eventsDir + "/old.2.log"}, orphanNotes(requireSound(t, root)))

	require.NoError(t, os.WriteFile(filepath.Join(root, eventsDir, unsweptFile), nil, 0o600))
	require.NoError(t, unloaded(root).Update(ctx, appendOne("alpha", "marked")))
	require.Equal(t, []string{"alpha.1.log", "beta.1.log", "gamma.1.log"}, eventFiles(t, root), "swept, and the marker gone")

	require.NoError(t, unloaded(root).Update(ctx, func(tx state.Tx) error {
		if err := tx.DeleteSpore(ctx, "beta"); err != nil {
			return err
		}
		if err := tx.CreateSpore(ctx, storetest.Spore("delta")); err != nil {
			return err
		}
		_, err := tx.Append(ctx, "delta", []state.Event{{Kind: state.KindLifecycle, Action: "created"}})
		return err
	}))
	files := eventFiles(t, root)
	require.NotContains(t, files, unsweptFile)
	require.NotContains(t, files, "beta.1.log")
	require.Len(t, files, 3, "%v", files)
	require.Empty(t, requireSound(t, root).Notes)
}

// TestCompactionSweeps: a long-lived writer sweeps on its first commit and
// after each compaction, so a log another process left behind meanwhile
// goes at the next compaction.
func TestCompactionSweeps(t *testing.T) {
	ctx := context.Background()
	root := populated(t)
	s, err := Open(ctx, root, Options{CompactBytes: 4 << 10})
	require.NoError(t, err)
	require.NoError(t, s.Update(ctx, appendOne("alpha", "first"))) // sweeps
	// Another process's crashed create.
	crashAt(t, root, "events-written", func(tx state.Tx) error {
		if err := tx.CreateSpore(ctx, storetest.Spore("zeta")); err != nil {
			return err
		}
		_, err := tx.Append(ctx, "zeta", []state.Event{{Kind: state.KindLifecycle, Action: "created"}})
		return err
	})
	require.True(t, slices.ContainsFunc(eventFiles(t, root), func(n string) bool { return strings.HasPrefix(n, "zeta.") }))
	gen := func() uint64 {
		l, err := unloaded(root).loadState(ctx)
		require.NoError(t, err)
		return l.m.gen
	}
	g := gen()
	for gen() == g {
		require.NoError(t, s.Update(ctx, appendOne("alpha", strings.Repeat("x", 500))))
	}
	require.False(t, slices.ContainsFunc(eventFiles(t, root), func(n string) bool { return strings.HasPrefix(n, "zeta.") }))
	require.Empty(t, requireSound(t, root).Notes)
}

// TestDeleteRemovesEmptyLog: a spore whose log holds nothing committed (a
// failed first append left the file) has it removed by its delete.
func TestDeleteRemovesEmptyLog(t *testing.T) {
	ctx := context.Background()
	root := populated(t)
	s, err := Open(ctx, root, Options{})
	require.NoError(t, err)
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, storetest.Spore("delta")) }))
	// What a failed first append of an older binary left behind.
	require.NoError(t, os.WriteFile(filepath.Join(root, eventsDir, "delta.7.log"), nil, 0o600))
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.DeleteSpore(ctx, "delta") }))
	require.NotContains(t, eventFiles(t, root), "delta.7.log")
}
