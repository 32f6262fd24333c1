package dirstore

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/storetest"
)

// testdata/format1, format2, format4, format5 and format6 are stores
// written by the code of those formats (see their READMEs), each with
// dump.json, what that code read back from it through the Store
// interface.

// copyFixture copies testdata/format1/store to a fresh directory.
func copyFixture(t *testing.T) string { return copyFixtureOf(t, 1) }

// copyFixtureOf copies testdata/format<v>/store to a fresh directory.
func copyFixtureOf(t *testing.T, v int) string {
	t.Helper()
	src := filepath.Join("testdata", fmt.Sprintf("format%d", v), "store")
	dst := filepath.Join(t.TempDir(), "store")
	require.NoError(t, filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
	}))
	return dst
}

func fixtureDump(t *testing.T) *storetest.Dump { return fixtureDumpOf(t, 1) }

func fixtureDumpOf(t *testing.T, v int) *storetest.Dump {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", fmt.Sprintf("format%d", v), "dump.json"))
	require.NoError(t, err)
	var d storetest.Dump
	require.NoError(t, json.Unmarshal(b, &d))
	return &d
}

// requireOldFormatRefused: every way in except Init says to run init.
func requireOldFormatRefused(t *testing.T, root string) { requireFormatRefused(t, root, 1) }

func requireFormatRefused(t *testing.T, root string, v int) {
	t.Helper()
	ctx := context.Background()
	_, err := Open(ctx, root, Options{})
	var ie *state.IncompatibleError
	require.ErrorAs(t, err, &ie)
	require.Equal(t, v, ie.Found)
	require.Equal(t, formatVersion, ie.Newest)
	require.Contains(t, err.Error(), "run 'sporectl init' to upgrade it")
	_, err = unloaded(root).Check(ctx)
	require.ErrorAs(t, err, &ie, "check reads nothing of an older format either")
	err = unloaded(root).Update(ctx, func(state.Tx) error { return nil })
	require.ErrorAs(t, err, &ie, "nor does a writer")
}

func requireUpgraded(t *testing.T, s *Store, want *storetest.Dump) {
	t.Helper()
	ctx := context.Background()
	got, err := storetest.ReadAll(ctx, s)
	require.NoError(t, err)
	require.Equal(t, want, got, "the upgrade keeps everything")
	rep, err := s.Check(ctx)
	require.NoError(t, err)
	require.Empty(t, rep.Problems)
	format, err := os.ReadFile(filepath.Join(s.root, formatFile))
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("sporectl store\nformat %d\n", formatVersion), string(format))
	snap, err := os.ReadFile(filepath.Join(s.root, snapshotFile))
	require.NoError(t, err)
	require.Contains(t, string(snap[:bytes.IndexByte(snap, '\n')]), fmt.Sprintf(`{"format":%d,`, formatVersion))
	require.Equal(t, formatVersion, s.Info().FormatVersion)
}

// TestUpgradeFormat1: a store written by the format-1 code is refused by
// Open, Check and Update with "run 'sporectl init'", and Init upgrades it
// in place: same data, clean check, FORMAT and snapshot at this version,
// a torn commit tail saved as any writer saves one, event logs untouched.
func TestUpgradeFormat1(t *testing.T) {
	ctx := context.Background()
	root := copyFixture(t)
	// A commit that died half way through, as the format-1 code leaves it.
	f, err := os.OpenFile(filepath.Join(root, "txlog.2"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`0badf00d {"tx":4,"rows":{"alpha"`)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	logBefore, err := os.ReadFile(filepath.Join(root, eventsDir, "alpha.1.log"))
	require.NoError(t, err)

	requireOldFormatRefused(t, root)
	s, created, err := Init(ctx, root, state.Settings{Runtime: "kube"}, Options{})
	require.NoError(t, err)
	require.False(t, created, "an upgrade creates nothing")
	want := fixtureDump(t)
	requireUpgraded(t, s, want)
	require.FileExists(t, filepath.Join(root, tornDir, "txlog.2.67"), "the torn tail is kept")
	require.NoFileExists(t, filepath.Join(root, "txlog.2"))
	fi, err := os.Stat(filepath.Join(root, "txlog.3"))
	require.NoError(t, err)
	require.Equal(t, int64(headerSize), fi.Size(), "the commit log starts with only its header after the upgrade")
	logAfter, err := os.ReadFile(filepath.Join(root, eventsDir, "alpha.1.log"))
	require.NoError(t, err)
	require.Equal(t, logBefore, logAfter)

	// A second init changes nothing; the new fields work.
	s, created, err = Init(ctx, root, state.Settings{}, Options{})
	require.NoError(t, err)
	require.False(t, created)
	requireUpgraded(t, s, want)
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, "beta")
		if err != nil {
			return err
		}
		require.Zero(t, sp.Generation, "fields new in format 2 start out zero")
		sp.Generation, sp.Health, sp.HealthReason = 1, "Dead", "OOMKilled"
		if _, err := storetest.Put(ctx, tx, sp); err != nil {
			return err
		}
		st, err := tx.Settings(ctx)
		if err != nil {
			return err
		}
		st.Recovery.BackoffMax = state.Duration(time.Hour)
		return tx.PutSettings(ctx, st)
	}))
	o, err := Open(ctx, root, Options{})
	require.NoError(t, err)
	var sp state.Spore
	var st state.Settings
	require.NoError(t, o.View(ctx, func(tx state.Tx) error {
		var err error
		if sp, err = tx.Spore(ctx, "beta"); err != nil {
			return err
		}
		st, err = tx.Settings(ctx)
		return err
	}))
	require.Equal(t, uint64(1), sp.Generation)
	require.Equal(t, "OOMKilled", sp.HealthReason)
	require.Equal(t, state.Duration(time.Hour), st.Recovery.BackoffMax)
}

// TestUpgradeFormat2: a store written by the format-2 code (its commit
// log has no header and three records) is refused by Open, Check and
// Update with "run 'sporectl init'", and Init upgrades it in place: same
// data, clean check, FORMAT and snapshot at this version, a new commit log
// that begins with its header, event logs untouched. Afterwards the
// upgraded store notices a commit log cut short, as any store since
// format 3.
func TestUpgradeFormat2(t *testing.T) {
	ctx := context.Background()
	root := copyFixtureOf(t, 2)
	before, err := os.ReadFile(filepath.Join(root, txlogName(2)))
	require.NoError(t, err)
	require.False(t, bytes.HasPrefix(before, encodeSlot(logHeader{Log: 2, Base: 2, TX: 2, End: headerSize})[:9]), "a format-2 log has no header")
	logBefore, err := os.ReadFile(filepath.Join(root, eventsDir, "beta.1.log"))
	require.NoError(t, err)

	requireFormatRefused(t, root, 2)
	s, created, err := Init(ctx, root, state.Settings{Runtime: "kube"}, Options{})
	require.NoError(t, err)
	require.False(t, created, "an upgrade creates nothing")
	want := fixtureDumpOf(t, 2)
	requireUpgraded(t, s, want)
	require.NoFileExists(t, filepath.Join(root, txlogName(2)))
	live, err := os.ReadFile(filepath.Join(root, txlogName(3)))
	require.NoError(t, err)
	require.Equal(t, newHeader(3, 5), live, "the new log holds its header only: gen 3 after transaction 5")
	logAfter, err := os.ReadFile(filepath.Join(root, eventsDir, "beta.1.log"))
	require.NoError(t, err)
	require.Equal(t, logBefore, logAfter)

	// A second init changes nothing.
	s, created, err = Init(ctx, root, state.Settings{}, Options{})
	require.NoError(t, err)
	require.False(t, created)
	requireUpgraded(t, s, want)

	// The upgraded store commits with its header, and a commit log cut
	// back to the header is noticed.
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		_, err := tx.Append(ctx, "alpha", []state.Event{{Kind: state.KindPrompt, Text: "after the upgrade"}})
		return err
	}))
	require.NoError(t, os.Truncate(filepath.Join(root, txlogName(3)), headerSize))
	_, err = Open(ctx, root, Options{})
	requireCorrupt(t, err, txlogName(3))
}

// TestUpgradeFormat4: a store written by the format-4 code (flat "spore"
// rows, in its snapshot and in the four records of its headed commit log)
// is refused by Open, Check and Update with "run 'sporectl init'", and
// Init upgrades it in place: same data, the format-3 and format-4 fields
// included, clean check, FORMAT and snapshot at this version with every
// row's wish and status apart and observed_generation 0, a new commit log
// holding only its header, event logs untouched. A second init changes
// nothing, and the split writes work on the upgraded store.
func TestUpgradeFormat4(t *testing.T) {
	ctx := context.Background()
	root := copyFixtureOf(t, 4)
	snapBefore, err := os.ReadFile(filepath.Join(root, snapshotFile))
	require.NoError(t, err)
	require.Contains(t, string(snapBefore), `{"spore":{"id":"alpha",`, "the format-4 rows are flat")
	logBefore, err := os.ReadFile(filepath.Join(root, eventsDir, "alpha.1.log"))
	require.NoError(t, err)

	requireFormatRefused(t, root, 4)
	s, created, err := Init(ctx, root, state.Settings{Runtime: "kube"}, Options{})
	require.NoError(t, err)
	require.False(t, created, "an upgrade creates nothing")
	want := fixtureDumpOf(t, 4)
	requireUpgraded(t, s, want)
	require.NoFileExists(t, filepath.Join(root, txlogName(2)))
	live, err := os.ReadFile(filepath.Join(root, txlogName(3)))
	require.NoError(t, err)
	require.Equal(t, newHeader(3, 6), live, "the new log holds its header only: gen 3 after transaction 6")
	logAfter, err := os.ReadFile(filepath.Join(root, eventsDir, "alpha.1.log"))
	require.NoError(t, err)
	require.Equal(t, logBefore, logAfter)
	snap, err := os.ReadFile(filepath.Join(root, snapshotFile))
	require.NoError(t, err)
	require.NotContains(t, string(snap), `"spore":{`, "every row is written in the new form")
	require.NotContains(t, string(snap), `"observed_generation"`, "the upgrade observes nothing")
	require.Equal(t, 3, bytes.Count(snap, []byte(`"wish":{`)))
	require.Equal(t, 3, bytes.Count(snap, []byte(`"status":{`)))
	for _, sp := range want.Spores {
		require.Zero(t, sp.ObservedGeneration)
	}

	// A second init changes nothing.
	s, created, err = Init(ctx, root, state.Settings{}, Options{})
	require.NoError(t, err)
	require.False(t, created)
	requireUpgraded(t, s, want)
	after, err := os.ReadFile(filepath.Join(root, snapshotFile))
	require.NoError(t, err)
	require.Equal(t, snap, after)

	// A pass writes beta's status at its generation; a stale one and a
	// wish that does not raise the generation are refused; a new wish
	// keeps the status, and the next handle reads both.
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, "beta")
		if err != nil {
			return err
		}
		require.Equal(t, uint64(5), sp.Generation)
		require.Equal(t, state.Duration(30*time.Minute), sp.Loop)
		st := sp.Status
		st.ObservedGeneration, st.Health, st.HealthReason = 5, "Healthy", ""
		if err := tx.PutStatus(ctx, "beta", st); err != nil {
			return err
		}
		st.ObservedGeneration = 4
		require.ErrorIs(t, tx.PutStatus(ctx, "beta", st), state.ErrStale)
		w := sp.Wish
		require.ErrorIs(t, tx.PutWish(ctx, w), state.ErrStale)
		w.Generation, w.Desired = 6, state.Running
		return tx.PutWish(ctx, w)
	}))
	o, err := Open(ctx, root, Options{})
	require.NoError(t, err)
	sp := view(t, o, func(tx state.Tx) (state.Spore, error) { return tx.Spore(ctx, "beta") })
	require.Equal(t, uint64(6), sp.Generation)
	require.Equal(t, state.Running, sp.Desired)
	require.Equal(t, uint64(5), sp.ObservedGeneration, "the status is kept, written against the wish before")
	st := want.Spores[1].Status
	st.ObservedGeneration, st.Health, st.HealthReason = 5, "Healthy", ""
	require.True(t, st.Equal(sp.Status), "the rest of the status is as upgraded: %+v", sp.Status)
	rep, err := o.Check(ctx)
	require.NoError(t, err)
	require.Empty(t, rep.Problems)
}

// TestUpgradeFormat5: a store written by the format-5 code, which knew no
// dead letters, is refused until init (a format-5 binary would read a dead
// letter as queued and drop its mark when it rewrote the row), and init
// upgrades it in place: its queued entries stay queued, none dead, and
// one of them can then be made a dead letter that the next handle reads.
func TestUpgradeFormat5(t *testing.T) {
	ctx := context.Background()
	root := copyFixtureOf(t, 5)
	requireFormatRefused(t, root, 5)
	s, created, err := Init(ctx, root, state.Settings{}, Options{})
	require.NoError(t, err)
	require.False(t, created)
	want := fixtureDumpOf(t, 5)
	require.Len(t, want.Outbox["alpha"], 2)
	require.Nil(t, want.Dead)
	requireUpgraded(t, s, want)

	at := time.Date(2026, 12, 6, 13, 0, 0, 0, time.UTC)
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		return tx.Bury(ctx, "alpha", "m1", state.DeadLetter{Reason: "bridge answered 413", At: at})
	}))
	o, err := Open(ctx, root, Options{})
	require.NoError(t, err)
	dead := view(t, o, func(tx state.Tx) ([]state.OutboxEntry, error) { return tx.DeadLetters(ctx, "alpha") })
	require.Len(t, dead, 1)
	require.Equal(t, want.Outbox["alpha"][0].Text, dead[0].Text)
	require.Equal(t, &state.DeadLetter{Reason: "bridge answered 413", At: at}, dead[0].Dead)
	queued := view(t, o, func(tx state.Tx) ([]state.OutboxEntry, error) { return tx.Outbox(ctx, "alpha") })
	require.Equal(t, want.Outbox["alpha"][1:], queued)
	rep, err := o.Check(ctx)
	require.NoError(t, err)
	require.Empty(t, rep.Problems)
}

// TestUpgradeCrash: an upgrade killed at any step leaves a store that
// every command still refuses with "run 'sporectl init'" (never one that
// reads half upgraded), and the next init finishes the upgrade.
func TestUpgradeCrash(t *testing.T) {
	for _, v := range []int{1, 2, 4, 5, 6} {
		t.Run(fmt.Sprintf("format%d", v), func(t *testing.T) { testUpgradeCrash(t, v) })
	}
}

func testUpgradeCrash(t *testing.T, v int) {
	ctx := context.Background()
	for _, at := range []string{"compact-log-created", "compact-snapshot-written", "upgrade-compacted"} {
		t.Run(at, func(t *testing.T) {
			root := copyFixtureOf(t, v)
			type crash struct{}
			setFailpoint(t, func(name string) {
				if name == at {
					panic(crash{})
				}
			})
			func() {
				defer func() {
					if r := recover(); r != nil {
						if _, ok := r.(crash); !ok {
							panic(r)
						}
					}
				}()
				_, _, err := Init(ctx, root, state.Settings{}, Options{})
				t.Fatalf("init survived its crash: %v", err)
			}()
			setFailpoint(t, func(string) {})
			requireFormatRefused(t, root, v)
			s, created, err := Init(ctx, root, state.Settings{}, Options{})
			require.NoError(t, err)
			require.False(t, created)
			requireUpgraded(t, s, fixtureDumpOf(t, v))
		})
	}
}

// TestUpgradeRefusesDamage: a damaged format-1 store is not upgraded (an
// upgrade rewrites the snapshot, and nothing damaged is ever rewritten);
// it is left exactly as it was.
func TestUpgradeRefusesDamage(t *testing.T) {
	ctx := context.Background()
	root := copyFixture(t)
	p := filepath.Join(root, snapshotFile)
	flipByte(t, p, middleOfLine(t, p, 2))
	before, err := os.ReadFile(p)
	require.NoError(t, err)
	_, _, err = Init(ctx, root, state.Settings{}, Options{})
	requireCorrupt(t, err, snapshotFile)
	after, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, before, after)
	requireOldFormatRefused(t, root)
}

// TestInitAfterOldPartialInit: what a format-1 in-place init leaves when
// it dies before writing FORMAT (the fixture's files with an empty
// snapshot) is recognised as an unfinished init and built again.
func TestInitAfterOldPartialInit(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	require.NoError(t, buildStore(root, state.Settings{Runtime: "local"}))
	require.NoError(t, os.Remove(filepath.Join(root, formatFile)))
	// The same snapshot as format 1 wrote it.
	snap, err := os.ReadFile(filepath.Join(root, snapshotFile))
	require.NoError(t, err)
	payload, bad := unframe(snap[:len(snap)-1])
	require.Empty(t, bad)
	old := bytes.Replace(payload, fmt.Appendf(nil, `{"format":%d,`, formatVersion), []byte(`{"format":1,`), 1)
	require.NotEqual(t, payload, old)
	require.NoError(t, os.WriteFile(filepath.Join(root, snapshotFile), appendFrame(nil, old), 0o600))
	s, created, err := Init(ctx, root, state.Settings{Runtime: "local"}, Options{})
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, formatVersion, s.Info().FormatVersion)
}
