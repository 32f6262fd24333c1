package dirstore

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// A log with a damaged line: repair keeps every intact line with its
// number, puts a marker where the damaged one was, keeps the old log
// whole under damaged/, and leaves check clean; a dry run writes nothing.
func TestRepairSetsADamagedLineAside(t *testing.T) {
	ctx := context.Background()
	root := populated(t)
	log := filepath.Join(root, eventsDir, "alpha.1.log")
	flipByte(t, log, middleOfLine(t, log, 3))
	st, err := Open(ctx, root, Options{})
	require.NoError(t, err)
	defer st.Close()
	require.NoError(t, st.Update(ctx, func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, "alpha")
		if err != nil {
			return err
		}
		sp.Health, sp.HealthReason = "Error", state.ReasonStoreDamage
		return tx.PutStatus(ctx, "alpha", sp.StatusAtWish())
	}))
	before, err := os.ReadFile(log)
	require.NoError(t, err)
	sums := fileSums(t, root)

	dry, err := st.Repair(ctx, "alpha", true)
	require.NoError(t, err)
	require.True(t, dry.DryRun)
	require.Len(t, dry.Damage, 1)
	require.Equal(t, eventsDir+"/alpha.1.log:3", dry.Damage[0].Where)
	require.Equal(t, 5, dry.Kept)
	require.Equal(t, 1, dry.Replaced)
	require.Equal(t, sums, fileSums(t, root), "a dry run writes nothing")

	rep, err := st.Repair(ctx, "alpha", false)
	require.NoError(t, err)
	require.Equal(t, 5, rep.Kept)
	require.Equal(t, 1, rep.Replaced)
	require.True(t, rep.Cleared)
	require.Len(t, rep.SetAside, 1)
	kept, err := os.ReadFile(filepath.Join(root, rep.SetAside[0]))
	require.NoError(t, err)
	require.Equal(t, before, kept, "the old log is kept whole, damaged line and all")
	require.NoFileExists(t, log, "the old log is replaced")

	evs := view(t, st, func(tx state.Tx) ([]state.Event, error) { return tx.Events(ctx, "alpha", 0, 0) })
	require.Len(t, evs, 7)
	for i, e := range evs {
		require.Equal(t, uint64(i+1), e.Seq, "numbers are kept")
	}
	require.Equal(t, "damaged", evs[2].Action)
	require.Contains(t, evs[2].Text, "line 3 of events/alpha.1.log could not be read (checksum mismatch")
	require.Contains(t, evs[2].Text, rep.SetAside[0])
	require.Equal(t, "prompt to alpha #1", evs[1].Text)
	require.Equal(t, "prompt to alpha #0", evs[3].Text, "the line after the damage is kept as it was")
	require.Equal(t, repairedAction, evs[6].Action)
	sp := view(t, st, func(tx state.Tx) (state.Spore, error) { return tx.Spore(ctx, "alpha") })
	require.Empty(t, sp.HealthReason, "the damage mark is cleared")

	c, err := st.Check(ctx)
	require.NoError(t, err)
	require.Empty(t, c.Problems)
	require.NotEmpty(t, c.Notes, "check notes what damaged/ keeps")

	again, err := st.Repair(ctx, "alpha", false)
	require.NoError(t, err)
	require.Empty(t, again.Damage, "a second repair finds nothing")
	require.Empty(t, again.SetAside)
}

// A row of state.json that does not decode: the spore is set aside whole
// (its line and its log under damaged/) and every other spore reads.
func TestRepairSetsAnUnreadableRowAside(t *testing.T) {
	ctx := context.Background()
	root := populated(t)
	reframe(t, filepath.Join(root, snapshotFile), 3, func(p []byte) []byte {
		require.Contains(t, string(p), `"id":"beta"`)
		return []byte(strings.Replace(string(p), `},"status":{`, `},"status":{"restarts":"many",`, 1))
	})
	st, err := Open(ctx, root, Options{})
	require.NoError(t, err)
	defer st.Close()
	rep, err := st.Repair(ctx, "beta", false)
	require.NoError(t, err)
	require.True(t, rep.Removed)
	require.Len(t, rep.Damage, 1)
	require.Equal(t, snapshotFile+":3", rep.Damage[0].Where)
	require.Len(t, rep.SetAside, 2, "the row's line and its log")
	line, err := os.ReadFile(filepath.Join(root, rep.SetAside[0]))
	require.NoError(t, err)
	require.Contains(t, string(line), `"restarts":"many"`)
	all := view(t, st, func(tx state.Tx) ([]state.Spore, error) { return tx.Spores(ctx) })
	require.Len(t, all, 2)
	c, err := st.Check(ctx)
	require.NoError(t, err)
	require.Empty(t, c.Problems)
}

func TestRepairOfAnUnknownSpore(t *testing.T) {
	st := newTestStore(t, Options{})
	_, err := st.Repair(context.Background(), "nope", false)
	require.ErrorIs(t, err, state.ErrNotFound)
}

// A row of state.json whose checksum fails (a flipped bit, a hand edit
// that kept the line): it is its spore's damage alone, every other spore
// reads and is written, a compaction keeps the damaged line byte for byte
// (never framed anew), and repair sets the spore aside.
func TestARowsDamagedLineIsItsSporesAlone(t *testing.T) {
	for _, damage := range []struct {
		name string
		do   func(t *testing.T, snap string)
	}{
		{"a flipped bit", func(t *testing.T, snap string) {
			require.Equal(t, 3, flipByte(t, snap, middleOfLine(t, snap, 3)), "beta's row")
		}},
		{"a hand edit", func(t *testing.T, snap string) {
			// A person wakes beta by editing its desired state.
			b, err := os.ReadFile(snap)
			require.NoError(t, err)
			lines := strings.SplitAfter(string(b), "\n")
			require.Contains(t, lines[2], `"id":"beta"`)
			edited := strings.Replace(lines[2], `"desired":"Paused"`, `"desired":"Running"`, 1)
			require.NotEqual(t, lines[2], edited)
			lines[2] = edited
			require.NoError(t, os.WriteFile(snap, []byte(strings.Join(lines, "")), 0o600))
		}},
	} {
		t.Run(damage.name, func(t *testing.T) { rowDamagedInPlace(t, damage.do) })
	}
}

func rowDamagedInPlace(t *testing.T, damage func(t *testing.T, snap string)) {
	ctx := context.Background()
	root := populated(t)
	snap := filepath.Join(root, snapshotFile)
	damage(t, snap)
	damaged := lineOfFile(t, snap, 3)

	st, err := Open(ctx, root, Options{CompactBytes: 1}) // every commit compacts
	require.NoError(t, err)
	defer st.Close()
	var all []state.Spore
	err = st.View(ctx, func(tx state.Tx) (err error) { all, err = tx.Spores(ctx); return err })
	var d *state.DamagedError
	require.ErrorAs(t, err, &d)
	require.Equal(t, []string{"beta"}, d.IDs())
	require.Equal(t, snapshotFile+":3", d.Spores["beta"].Where())
	require.Contains(t, d.Spores["beta"].Reason, "checksum mismatch")
	require.Len(t, all, 2)

	// Another spore is written, and the store compacted: the damaged line
	// is still there as it was.
	require.NoError(t, st.Update(ctx, func(tx state.Tx) error {
		_, err := tx.Append(ctx, "gamma", []state.Event{{Kind: state.KindPrompt, From: "user:test", Text: "still here"}})
		return err
	}))
	require.Equal(t, damaged, lineOfFile(t, snap, 3), "a compaction never frames a damaged line anew")
	rep, err := st.Check(ctx)
	require.NoError(t, err)
	requireProblem(t, rep, snapshotFile+":3")

	r, err := st.Repair(ctx, "beta", false)
	require.NoError(t, err)
	require.True(t, r.Removed)
	kept, err := os.ReadFile(filepath.Join(root, r.SetAside[0]))
	require.NoError(t, err)
	require.Equal(t, damaged+"\n", string(kept), "the damaged line is kept byte for byte")
	rep, err = st.Check(ctx)
	require.NoError(t, err)
	require.Empty(t, rep.Problems)
}

func lineOfFile(t *testing.T, p string, n int) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	lines := strings.Split(string(b), "\n")
	require.Greater(t, len(lines), n)
	return lines[n-1]
}

// A log whose last line does not read: LastEvents gives the others' last
// events and names that spore's damage, as a whole read does.
func TestLastEventsLeavesADamagedLogOut(t *testing.T) {
	ctx := context.Background()
	root := populated(t)
	log := filepath.Join(root, eventsDir, "alpha.1.log")
	flipByte(t, log, middleOfLine(t, log, countLines(t, log)))
	st, err := Open(ctx, root, Options{})
	require.NoError(t, err)
	defer st.Close()
	var last map[string]state.Event
	err = st.View(ctx, func(tx state.Tx) (err error) {
		last, err = tx.LastEvents(ctx, []string{"alpha", "beta", "gamma"})
		return err
	})
	var d *state.DamagedError
	require.ErrorAs(t, err, &d)
	require.Equal(t, []string{"alpha"}, d.IDs())
	require.Contains(t, last, "beta")
	require.Contains(t, last, "gamma")
	require.NotContains(t, last, "alpha")
}
