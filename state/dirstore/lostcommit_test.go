package dirstore

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// A commit log that lost committed records — cut by a truncate, a record
// taken out — is corruption, not a torn tail (format §3, §6): every entry
// point refuses the store naming the commit log, nothing is rewritten, and
// no transaction id is handed out again.

// recordEnds returns the offset where each line of the commit log ends.
func recordEnds(t *testing.T, p string) []int64 {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	var ends []int64
	for off := 0; off < len(b); {
		nl := bytes.IndexByte(b[off:], '\n')
		require.GreaterOrEqual(t, nl, 0)
		off += nl + 1
		ends = append(ends, int64(off))
	}
	return ends
}

func TestLostCommitRecords(t *testing.T) {
	ctx := context.Background()
	log := txlogName(2)
	// populated's txlog.2: the header's two lines, then transactions 4, 5
	// and 6 (lines 3, 4, 5).
	tests := []struct {
		name   string
		damage func(t *testing.T, p string)
	}{
		{"truncated to nothing", func(t *testing.T, p string) { require.NoError(t, os.Truncate(p, 0)) }},
		{"truncated inside the header", func(t *testing.T, p string) { require.NoError(t, os.Truncate(p, 100)) }},
		{"every record cut off", func(t *testing.T, p string) { require.NoError(t, os.Truncate(p, headerSize)) }},
		{"last record cut off", func(t *testing.T, p string) {
			ends := recordEnds(t, p)
			require.NoError(t, os.Truncate(p, ends[len(ends)-2]))
		}},
		{"last two records cut off", func(t *testing.T, p string) {
			ends := recordEnds(t, p)
			require.NoError(t, os.Truncate(p, ends[len(ends)-3]))
		}},
		{"last record cut in half", func(t *testing.T, p string) {
			// Looks like a torn tail, but the record was committed.
			ends := recordEnds(t, p)
			require.NoError(t, os.Truncate(p, (ends[len(ends)-2]+ends[len(ends)-1])/2))
		}},
		{"a record taken out of the middle", func(t *testing.T, p string) {
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			lines := bytes.SplitAfter(b, []byte("\n"))
			lines = append(lines[:headerLines+1], lines[headerLines+2:]...)
			require.NoError(t, os.WriteFile(p, bytes.Join(lines, nil), 0o600))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := populated(t)
			s, err := Open(ctx, root, Options{}) // a long-lived handle that read everything
			require.NoError(t, err)
			before := mustDump(t, s)
			tc.damage(t, filepath.Join(root, log))
			sums := fileSums(t, root)

			_, err = Open(ctx, root, Options{})
			ce := requireCorrupt(t, err, log)
			require.Positive(t, ce.Line, "%v", err)
			_, _, err = Init(ctx, root, state.Settings{Runtime: "local"}, Options{})
			requireCorrupt(t, err, log)
			for _, st := range []*Store{unloaded(root), s} {
				err = st.View(ctx, func(tx state.Tx) error { return nil })
				requireCorrupt(t, err, log)
				err = st.Update(ctx, func(tx state.Tx) error {
					_, err := tx.Append(ctx, "alpha", []state.Event{{Kind: state.KindPrompt, Text: "reuses a transaction id"}})
					return err
				})
				requireCorrupt(t, err, log)
				rep, err := st.Check(ctx)
				require.NoError(t, err)
				require.False(t, rep.OK(), "check calls a store that lost acknowledged transactions sound")
				require.Equal(t, log, rep.Problems[0].Where[:len(log)])
			}
			require.Equal(t, sums, fileSums(t, root), "nothing is rewritten, and no event line is dropped")
			// Nothing was lost from what the damaged files still hold.
			for id, evs := range before.Events {
				got, err := os.ReadFile(filepath.Join(root, eventsDir, id+".1.log"))
				require.NoError(t, err)
				require.Equal(t, len(evs), bytes.Count(got, []byte("\n")))
			}
		})
	}
}

// TestLostRecordsMessage: the error says what was lost, by transaction and
// byte, so a person can compare it with a backup.
func TestLostRecordsMessage(t *testing.T) {
	root := populated(t)
	p := filepath.Join(root, txlogName(2))
	ends := recordEnds(t, p)
	require.NoError(t, os.Truncate(p, ends[len(ends)-2]))
	_, err := Open(context.Background(), root, Options{})
	ce := requireCorrupt(t, err, txlogName(2))
	require.Equal(t, headerLines+3, ce.Line, "the first missing line")
	require.Contains(t, ce.Reason, fmt.Sprintf("the header records transaction 6, ending at byte %d, as committed", ends[len(ends)-1]))
	require.Contains(t, ce.Reason, fmt.Sprintf("end with transaction 5 at byte %d", ends[len(ends)-2]))
}

// TestHeaderSlots: the header's two slots take turns, so one that a crash
// cut short (or that is otherwise unreadable) leaves the other: the store
// reads on, check notes it, and the next commits rewrite it. Both
// unreadable, or a slot that names another log, is damage.
func TestHeaderSlots(t *testing.T) {
	ctx := context.Background()
	slot := func(t *testing.T, root string, i int) logHeader {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(root, txlogName(2)))
		require.NoError(t, err)
		h, bad := decodeSlot(b[i*slotSize : (i+1)*slotSize])
		require.Empty(t, bad)
		return h
	}
	t.Run("they record the last two commits", func(t *testing.T) {
		root := populated(t)
		ends := recordEnds(t, filepath.Join(root, txlogName(2)))
		// Transactions 5 and 6: 6 in slot 0, 5 in slot 1.
		require.Equal(t, logHeader{Log: 2, Base: 3, TX: 6, End: ends[len(ends)-1]}, slot(t, root, 0))
		require.Equal(t, logHeader{Log: 2, Base: 3, TX: 5, End: ends[len(ends)-2]}, slot(t, root, 1))
	})
	t.Run("one slot unreadable", func(t *testing.T) {
		root := populated(t)
		p := filepath.Join(root, txlogName(2))
		flipByte(t, p, slotSize/2) // slot 0, the newer
		before := mustDump(t, unloaded(root))
		rep, err := unloaded(root).Check(ctx)
		require.NoError(t, err)
		require.True(t, rep.OK(), "%v", rep.Problems)
		require.Len(t, rep.Notes, 1)
		require.Equal(t, txlogName(2), rep.Notes[0].Where)
		require.Contains(t, rep.Notes[0].Message, "header slot 1 is unreadable")
		// Two commits later both slots are whole again.
		s := unloaded(root)
		for range 2 {
			require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
				_, err := tx.Append(ctx, "beta", []state.Event{{Kind: state.KindPrompt, Text: "on"}})
				return err
			}))
		}
		require.Equal(t, uint64(8), slot(t, root, 0).TX)
		require.Equal(t, uint64(7), slot(t, root, 1).TX)
		rep = requireSound(t, root)
		require.Empty(t, rep.Notes)
		after := mustDump(t, unloaded(root))
		require.Equal(t, before.Heads["beta"].LastSeq+2, after.Heads["beta"].LastSeq)
	})
	t.Run("both slots unreadable", func(t *testing.T) {
		root := populated(t)
		p := filepath.Join(root, txlogName(2))
		flipByte(t, p, slotSize/2)
		flipByte(t, p, slotSize+slotSize/2)
		sums := fileSums(t, root)
		_, err := Open(ctx, root, Options{})
		ce := requireCorrupt(t, err, txlogName(2))
		require.Equal(t, 1, ce.Line)
		rep, err := unloaded(root).Check(ctx)
		require.NoError(t, err)
		requireProblem(t, rep, txlogName(2)+":1")
		require.Equal(t, sums, fileSums(t, root))
	})
	t.Run("a slot of another log", func(t *testing.T) {
		root := populated(t)
		reframe(t, filepath.Join(root, txlogName(2)), 2, func(p []byte) []byte {
			return bytes.Replace(p, []byte(`{"log":2,`), []byte(`{"log":1,`), 1)
		})
		_, err := Open(ctx, root, Options{})
		ce := requireCorrupt(t, err, txlogName(2))
		require.Equal(t, 2, ce.Line)
		require.Contains(t, ce.Reason, "not 2")
	})
}

// TestHeaderLagsNeverFalsePositive: the header is written after the
// commit's fsync and never ahead of it; a commit whose writer died before
// its header write (failpoint "committed"), a header write that fails, and
// a record withdrawn after a failed fsync all leave a store that reads on.
func TestHeaderLagsNeverFalsePositive(t *testing.T) {
	ctx := context.Background()
	root := populated(t)
	type crash struct{}
	setFailpoint(t, func(name string) {
		if name == "committed" {
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
		_ = unloaded(root).Update(ctx, func(tx state.Tx) error {
			_, err := tx.Append(ctx, "alpha", []state.Event{{Kind: state.KindPrompt, Text: "committed, header not yet"}})
			return err
		})
		t.Fatal("the writer survived its crash")
	}()
	setFailpoint(t, func(string) {})
	d := mustDump(t, unloaded(root))
	evs := d.Events["alpha"]
	require.Equal(t, "committed, header not yet", evs[len(evs)-1].Text, "the record is the commit point")
	requireSound(t, root)

	// A header write that fails (say the disk of a copy-on-write file
	// system is full) does not fail the commit.
	fired := 0
	setWriteAt(t, func(f *os.File, b []byte, off int64) (int, error) {
		if isCommitLog(f.Name()) && off < headerSize {
			fired++
			// Only the new checksum lands: the slot no longer checks out.
			n, _ := f.WriteAt(b[:crcLen], off)
			return n, fmt.Errorf("injected: %w", os.ErrInvalid)
		}
		return f.WriteAt(b, off)
	})
	require.NoError(t, unloaded(root).Update(ctx, func(tx state.Tx) error {
		_, err := tx.Append(ctx, "alpha", []state.Event{{Kind: state.KindPrompt, Text: "header write failed"}})
		return err
	}))
	require.Equal(t, 1, fired)
	rep := requireSound(t, root)
	require.Len(t, rep.Notes, 1, "the half-written slot")
	d = mustDump(t, unloaded(root))
	evs = d.Events["alpha"]
	require.Equal(t, "header write failed", evs[len(evs)-1].Text)
}
