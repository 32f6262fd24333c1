package dirstore

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/storetest"
)

// A full disk or a failing fsync during a commit fails the Update with a
// *state.UnavailableError and leaves the store exactly as it was; the next
// Update carries on with no gap in sequence numbers.
//
// These tests replace the package-level seams of fs.go, so they must never
// call t.Parallel (nor may any test that writes to a store while they run).

func setWriteAt(t *testing.T, fn func(*os.File, []byte, int64) (int, error)) (restore func()) {
	old := writeAt
	writeAt = fn
	restore = func() { writeAt = old }
	t.Cleanup(restore)
	return restore
}

func setSyncFile(t *testing.T, fn func(*os.File) error) (restore func()) {
	old := syncFile
	syncFile = fn
	restore = func() { syncFile = old }
	t.Cleanup(restore)
	return restore
}

func setFailpoint(t *testing.T, fn func(string)) {
	old := failpoint
	failpoint = fn
	t.Cleanup(func() { failpoint = old })
}

func isEventLog(p string) bool {
	return filepath.Base(filepath.Dir(p)) == eventsDir && strings.HasSuffix(p, ".log")
}
func isEventsDir(p string) bool { return filepath.Base(p) == eventsDir }
func isCommitLog(p string) bool {
	_, ok := parseTxlogName(filepath.Base(p))
	return ok
}

// halfWrite is a disk that fills up mid-write: half the bytes land, then
// ENOSPC.
func halfWrite(match func(string) bool, fired *int) func(*os.File, []byte, int64) (int, error) {
	return func(f *os.File, b []byte, off int64) (int, error) {
		if !match(f.Name()) {
			return f.WriteAt(b, off)
		}
		*fired++
		n, err := f.WriteAt(b[:len(b)/2], off)
		if err != nil {
			return n, err
		}
		return n, syscall.ENOSPC
	}
}

func failingSync(match func(string) bool, err error, fired *int) func(*os.File) error {
	return func(f *os.File) error {
		if match(f.Name()) {
			*fired++
			return err
		}
		return f.Sync()
	}
}

var outboxAt = time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)

// workload is one transaction touching every kind of record: events of an
// existing spore (and of a new one), an outbox entry and a spore record.
func workload(ctx context.Context, tx state.Tx, newSpore bool) (alpha, delta []state.Event, err error) {
	if newSpore {
		if err := tx.CreateSpore(ctx, storetest.Spore("delta")); err != nil {
			return nil, nil, err
		}
		if delta, err = tx.Append(ctx, "delta", []state.Event{{Kind: state.KindLifecycle, Action: "created"}, {Kind: state.KindPrompt, Text: "first"}}); err != nil {
			return nil, nil, err
		}
	}
	if alpha, err = tx.Append(ctx, "alpha", []state.Event{{Kind: state.KindPrompt, Text: "one"}, {Kind: state.KindAgent, BridgeSeq: 1, Line: []byte(`{"type":"assistant"}`)}}); err != nil {
		return nil, nil, err
	}
	if _, err := tx.Enqueue(ctx, state.OutboxEntry{ID: "m-disk", Spore: "beta", From: "user:test", Text: "queued on a full disk", At: outboxAt}); err != nil {
		return nil, nil, err
	}
	sp, err := tx.Spore(ctx, "alpha")
	if err != nil {
		return nil, nil, err
	}
	sp.Desired, sp.Generation = state.Running, sp.Generation+1
	return alpha, delta, tx.PutWish(ctx, sp.Wish)
}

// afterWorkload is what a store showing before must show once workload
// committed and returned alpha and delta.
func afterWorkload(before *storeDump, alpha, delta []state.Event) *storeDump {
	w := *before
	w.Spores = slices.Clone(before.Spores)
	w.Heads = map[string]state.SporeHead{}
	w.Events = map[string][]state.Event{}
	w.Outbox = map[string][]state.OutboxEntry{}
	for id, h := range before.Heads {
		w.Heads[id] = h
	}
	for id, e := range before.Events {
		w.Events[id] = slices.Clone(e)
	}
	for id, o := range before.Outbox {
		w.Outbox[id] = slices.Clone(o)
	}
	for i := range w.Spores {
		if w.Spores[i].ID == "alpha" {
			w.Spores[i].Desired, w.Spores[i].Generation = state.Running, w.Spores[i].Generation+1
		}
	}
	w.Events["alpha"] = append(w.Events["alpha"], alpha...)
	w.Heads["alpha"] = state.SporeHead{LastSeq: alpha[len(alpha)-1].Seq}
	w.Outbox["beta"] = append(w.Outbox["beta"], state.OutboxEntry{ID: "m-disk", Spore: "beta", From: "user:test", Text: "queued on a full disk", At: outboxAt})
	if delta != nil {
		w.Spores = append(w.Spores, storetest.Spore("delta"))
		slices.SortFunc(w.Spores, func(a, b state.Spore) int { return strings.Compare(a.ID, b.ID) })
		w.Events["delta"] = delta
		w.Heads["delta"] = state.SporeHead{LastSeq: delta[len(delta)-1].Seq}
		w.Outbox["delta"] = nil
	}
	return &w
}

func requireSeqsFollow(t *testing.T, last uint64, evs []state.Event) {
	t.Helper()
	require.NotEmpty(t, evs)
	for i, e := range evs {
		require.Equal(t, last+1+uint64(i), e.Seq, "sequence numbers must continue without a gap")
	}
}

// requireSound checks the store on disk with a handle that never saw it.
func requireSound(t *testing.T, root string) *state.CheckReport {
	t.Helper()
	rep, err := unloaded(root).Check(context.Background())
	require.NoError(t, err)
	require.Empty(t, rep.Problems)
	return rep
}

func TestDiskFullDuringCommit(t *testing.T) {
	ctx := context.Background()
	enospc := syscall.ENOSPC
	tests := []struct {
		name     string
		newSpore bool
		// inject replaces a seam and returns how to restore it.
		inject   func(t *testing.T, fired *int) func()
		diskFull bool // the error must say so
	}{
		{
			name:     "event log write",
			inject:   func(t *testing.T, n *int) func() { return setWriteAt(t, halfWrite(isEventLog, n)) },
			diskFull: true,
		},
		{
			name:     "event log write, new spore's log",
			newSpore: true,
			inject: func(t *testing.T, n *int) func() {
				return setWriteAt(t, halfWrite(func(p string) bool { return strings.HasPrefix(filepath.Base(p), "delta.") }, n))
			},
			diskFull: true,
		},
		{
			name:   "event log fsync",
			inject: func(t *testing.T, n *int) func() { return setSyncFile(t, failingSync(isEventLog, syscall.EIO, n)) },
		},
		{
			name:     "event log fsync, ENOSPC",
			inject:   func(t *testing.T, n *int) func() { return setSyncFile(t, failingSync(isEventLog, enospc, n)) },
			diskFull: true,
		},
		{
			name:     "events directory fsync after creating a log",
			newSpore: true,
			inject:   func(t *testing.T, n *int) func() { return setSyncFile(t, failingSync(isEventsDir, enospc, n)) },
			diskFull: true,
		},
		{
			name:     "commit log write",
			inject:   func(t *testing.T, n *int) func() { return setWriteAt(t, halfWrite(isCommitLog, n)) },
			diskFull: true,
		},
		{
			name:     "commit log write, new spore",
			newSpore: true,
			inject:   func(t *testing.T, n *int) func() { return setWriteAt(t, halfWrite(isCommitLog, n)) },
			diskFull: true,
		},
		{
			name:   "commit log fsync",
			inject: func(t *testing.T, n *int) func() { return setSyncFile(t, failingSync(isCommitLog, syscall.EIO, n)) },
		},
		{
			name:     "commit log fsync, ENOSPC",
			inject:   func(t *testing.T, n *int) func() { return setSyncFile(t, failingSync(isCommitLog, enospc, n)) },
			diskFull: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := populated(t)
			s, err := Open(ctx, root, Options{})
			require.NoError(t, err)
			before := mustDump(t, s)

			fired := 0
			restore := tc.inject(t, &fired)
			err = s.Update(ctx, func(tx state.Tx) error {
				_, _, err := workload(ctx, tx, tc.newSpore)
				return err
			})
			require.Equal(t, 1, fired, "the fault was not injected")
			var ue *state.UnavailableError
			require.ErrorAs(t, err, &ue, "got %T: %v", err, err)
			if tc.diskFull {
				require.ErrorIs(t, err, syscall.ENOSPC)
				require.Contains(t, err.Error(), "disk full")
			} else {
				require.NotContains(t, err.Error(), "disk full")
			}

			// Nothing of the transaction is visible, to this process or
			// to a new one, and the store is sound.
			requireDumpEqual(t, before, mustDump(t, s))
			requireDumpEqual(t, before, mustDump(t, unloaded(root)))
			requireSound(t, root)
			rep, err := s.Check(ctx)
			require.NoError(t, err)
			require.Empty(t, rep.Problems)

			// Space is back: the same transaction commits, numbered
			// right after what was committed before.
			restore()
			var alpha, delta []state.Event
			require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
				var err error
				alpha, delta, err = workload(ctx, tx, tc.newSpore)
				return err
			}))
			requireSeqsFollow(t, before.Heads["alpha"].LastSeq, alpha)
			if tc.newSpore {
				requireSeqsFollow(t, 0, delta)
			}
			want := afterWorkload(before, alpha, delta)
			requireDumpEqual(t, want, mustDump(t, s))
			requireDumpEqual(t, want, mustDump(t, unloaded(root)))
			rep = requireSound(t, root)
			require.Empty(t, rep.Notes, "the retry leaves nothing behind")
		})
	}
}

// logBuffer captures the store's log so a test can see that a failure it
// injected was met (and not silently skipped).
func logBuffer() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(slog.NewTextHandler(&buf, nil)), &buf
}

// TestDiskFullDuringCompaction: compaction runs after the commit point
// (format §5 step 4, §7), so a full disk there must not fail the Update —
// the transaction is committed — but must leave a store that reads the
// same, checks clean, and compacts on a later Update.
//
// The snapshot itself is written by renameio, which does not go through
// the writeAt seam; the fsyncs around it do go through syncFile, and a
// full disk surfaces as ENOSPC from fsync on Linux, so each of them is
// failed in turn.
func TestDiskFullDuringCompaction(t *testing.T) {
	ctx := context.Background()
	steps := []string{
		"fsync the new commit log",
		"fsync the store directory after creating it",
		"fsync the store directory after renaming the snapshot",
		"fsync the store directory after removing the old commit log",
	}
	for k, step := range steps {
		t.Run(step, func(t *testing.T) {
			root := populated(t)
			logger, logs := logBuffer()
			s, err := Open(ctx, root, Options{CompactBytes: 1, Logger: logger})
			require.NoError(t, err)
			before := mustDump(t, s)
			gen := func() uint64 {
				l, err := unloaded(root).loadState(ctx)
				require.NoError(t, err)
				return l.m.gen
			}
			genBefore := gen()

			// Fail the k-th fsync after the commit point.
			armed, calls, fired := false, 0, 0
			setFailpoint(t, func(name string) {
				if name == "committed" {
					armed = true
				}
			})
			restore := setSyncFile(t, func(f *os.File) error {
				if armed {
					calls++
					if calls == k+1 {
						fired++
						return syscall.ENOSPC
					}
				}
				return f.Sync()
			})

			var alpha []state.Event
			require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
				var err error
				alpha, _, err = workload(ctx, tx, false)
				return err
			}), "the transaction committed before compaction began")
			require.Equal(t, 1, fired, "the fault was not injected")
			require.Contains(t, logs.String(), "compaction failed")
			require.Contains(t, logs.String(), "no space left on device")
			if k < 3 {
				// The last step's error is not wrapped by ioErr: see
				// TestStaleLogCleanupDiskFull.
				require.Contains(t, logs.String(), "disk full")
			}

			want := afterWorkload(before, alpha, nil)
			requireDumpEqual(t, want, mustDump(t, s))
			requireDumpEqual(t, want, mustDump(t, unloaded(root)))
			requireSound(t, root)

			// The disk has room again: the next writer tidies up and
			// compacts, and numbering goes on.
			restore()
			var more []state.Event
			require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
				var err error
				more, err = tx.Append(ctx, "alpha", []state.Event{{Kind: state.KindPrompt, Text: "after"}})
				return err
			}))
			requireSeqsFollow(t, alpha[len(alpha)-1].Seq, more)
			want.Events["alpha"] = append(want.Events["alpha"], more...)
			want.Heads["alpha"] = state.SporeHead{LastSeq: more[0].Seq}
			requireDumpEqual(t, want, mustDump(t, unloaded(root)))
			rep := requireSound(t, root)
			require.Empty(t, rep.Notes)
			require.Greater(t, gen(), genBefore, "compaction never succeeded")
			entries, err := os.ReadDir(root)
			require.NoError(t, err)
			var logsLeft []string
			for _, e := range entries {
				if isCommitLog(e.Name()) {
					logsLeft = append(logsLeft, e.Name())
				}
			}
			require.Equal(t, []string{txlogName(gen())}, logsLeft)
		})
	}
}

// TestDiskFullWritesNothingForGood: what a failed commit wrote is cut
// back. A failed event-log append leaves every file as it was; a failed
// commit-log append leaves the commit log as it was (no partial record
// for a reader to meet), and only bytes past a log's committed size, which
// no reader sees and the next append cuts.
func TestDiskFullWritesNothingForGood(t *testing.T) {
	ctx := context.Background()
	alphaLog := filepath.Join(eventsDir, "alpha.1.log")
	for _, tc := range []struct {
		name    string
		match   func(string) bool
		changed []string // files allowed to differ
	}{
		{"event log", isEventLog, nil},
		{"commit log", isCommitLog, []string{alphaLog}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := populated(t)
			s, err := Open(ctx, root, Options{})
			require.NoError(t, err)
			sums := fileSums(t, root)
			logBefore, err := os.ReadFile(filepath.Join(root, alphaLog))
			require.NoError(t, err)
			fired := 0
			setWriteAt(t, halfWrite(tc.match, &fired))
			err = s.Update(ctx, func(tx state.Tx) error {
				_, _, err := workload(ctx, tx, false)
				return err
			})
			require.ErrorIs(t, err, syscall.ENOSPC)
			require.Equal(t, 1, fired)
			after := fileSums(t, root)
			for _, f := range tc.changed {
				delete(sums, f)
				delete(after, f)
			}
			require.Equal(t, sums, after)
			logAfter, err := os.ReadFile(filepath.Join(root, alphaLog))
			require.NoError(t, err)
			require.Equal(t, logBefore, logAfter[:len(logBefore)], "committed events were rewritten")
		})
	}
}

// TestStaleLogCleanupDiskFull: removing a commit log left by an
// interrupted compaction ends with a directory fsync; on a full disk the
// Update fails as a *state.UnavailableError saying the disk is full.
func TestStaleLogCleanupDiskFull(t *testing.T) {
	ctx := context.Background()
	root := populated(t)
	// What a compaction interrupted after its snapshot rename leaves.
	require.NoError(t, os.WriteFile(filepath.Join(root, txlogName(1)), nil, 0o600))
	s, err := Open(ctx, root, Options{})
	require.NoError(t, err)
	fired := 0
	setSyncFile(t, failingSync(func(p string) bool { return p == root }, syscall.ENOSPC, &fired))
	err = s.Update(ctx, func(tx state.Tx) error {
		_, _, err := workload(ctx, tx, false)
		return err
	})
	require.Equal(t, 1, fired)
	require.ErrorIs(t, err, syscall.ENOSPC)
	var ue *state.UnavailableError
	require.ErrorAs(t, err, &ue, "got %T: %v", err, err)
	require.Contains(t, err.Error(), "disk full")
}

// TestReaderForgetsAWithdrawnRecord: a reader in another handle that read a
// commit record in the moment before its writer's fsync failed and cut it
// must drop what it cached, not fail forever or keep the ghost.
func TestReaderForgetsAWithdrawnRecord(t *testing.T) {
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "store")
	w, _, err := Init(ctx, root, state.Settings{Runtime: "local"}, Options{})
	require.NoError(t, err)
	r, err := Open(ctx, root, Options{})
	require.NoError(t, err)
	require.NoError(t, w.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, storetest.Spore("real")) }))

	var sawGhost bool
	failpoint = func(at string) {
		if at != "commit-written" {
			return
		}
		_ = r.View(ctx, func(tx state.Tx) error {
			_, err := tx.Spore(ctx, "ghost")
			sawGhost = err == nil
			return nil
		})
	}
	syncFile = func(f *os.File) error {
		if strings.HasPrefix(filepath.Base(f.Name()), txlogPrefix) {
			return syscall.EIO
		}
		return f.Sync()
	}
	t.Cleanup(func() {
		failpoint = func(string) {}
		syncFile = func(f *os.File) error { return f.Sync() }
	})
	err = w.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, storetest.Spore("ghost")) })
	require.Error(t, err)
	require.True(t, sawGhost, "the reader should have read the record before it was cut")
	failpoint = func(string) {}
	syncFile = func(f *os.File) error { return f.Sync() }

	spores := view(t, r, func(tx state.Tx) ([]state.Spore, error) { return tx.Spores(ctx) })
	require.Len(t, spores, 1, "the withdrawn transaction is forgotten")
	require.Equal(t, "real", spores[0].ID)
	require.NoError(t, w.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, storetest.Spore("next")) }))
	spores = view(t, r, func(tx state.Tx) ([]state.Spore, error) { return tx.Spores(ctx) })
	require.Len(t, spores, 2)
}
