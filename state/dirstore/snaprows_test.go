package dirstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/storetest"
)

// bisectSmall makes every snapshot of this test, however small, found by
// bisection rather than read whole at open.
func bisectSmall(t *testing.T) {
	old := sparseFrom
	sparseFrom = 0
	t.Cleanup(func() { sparseFrom = old })
}

// fleetStore is a compacted store of n spores s-0000…, every seventh with
// a queued message.
func fleetStore(t *testing.T, n int) string {
	t.Helper()
	ctx := context.Background()
	s := newTestStore(t, Options{})
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		for i := range n {
			id := fmt.Sprintf("s-%04d", i)
			if err := tx.CreateSpore(ctx, storetest.Spore(id)); err != nil {
				return err
			}
			if i%7 == 0 {
				if _, err := tx.Enqueue(ctx, state.OutboxEntry{ID: "m-" + id, Spore: id, From: "user:ann", Text: "hi " + id}); err != nil {
					return err
				}
			}
		}
		return nil
	}))
	require.NoError(t, s.compact(s.cache))
	return s.root
}

func openFresh(t *testing.T, root string, opts Options) *Store {
	t.Helper()
	st, err := Open(context.Background(), root, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// A read of one spore of a large snapshot reads a few of its rows, found
// by bisection, and never the whole file; a spore it does not hold is
// found absent the same way. Every spore, and every id between them,
// reads as the whole file says.
func TestOneSporeIsFoundWithoutReadingTheSnapshot(t *testing.T) {
	ctx := context.Background()
	root := fleetStore(t, 2000)
	fi, err := os.Stat(filepath.Join(root, snapshotFile))
	require.NoError(t, err)
	require.Greater(t, fi.Size(), sparseFrom, "the test's snapshot is large enough to bisect")

	st := openFresh(t, root, Options{})
	m := st.cache.m
	require.False(t, m.snap.loaded, "opening reads the header alone")
	sp, err := viewSpore(ctx, st, "s-1234")
	require.NoError(t, err)
	require.Equal(t, "s-1234", sp.ID)
	require.False(t, m.snap.loaded, "one spore's read does not read the snapshot whole")
	require.LessOrEqual(t, len(m.snap.found), 150, "rows read to find one among 2,000 (blocks of 4 KiB)")
	_, err = viewSpore(ctx, st, "s-1234x")
	require.ErrorIs(t, err, state.ErrNotFound)
	require.False(t, m.snap.loaded, "an absent spore is found absent without reading the snapshot")

	// Every id, and ids before, between and after them, against a whole read.
	whole := openFresh(t, root, Options{})
	var all []state.Spore
	require.NoError(t, whole.View(ctx, func(tx state.Tx) error { all, err = tx.Spores(ctx); return err }))
	require.Len(t, all, 2000)
	for i, want := range all {
		st := openFresh(t, root, Options{})
		require.NoError(t, st.View(ctx, func(tx state.Tx) error {
			got, err := tx.Spore(ctx, want.ID)
			require.NoError(t, err)
			require.Equal(t, want, got)
			out, err := tx.Outbox(ctx, want.ID)
			require.NoError(t, err)
			require.Equal(t, i%7 == 0, len(out) == 1, "%s's outbox", want.ID)
			for _, absent := range []string{want.ID + "-", "s-" + want.ID[2:5], "a", "z"} {
				_, err := tx.Spore(ctx, absent)
				require.ErrorIs(t, err, state.ErrNotFound, "%s", absent)
			}
			return nil
		}))
		require.False(t, st.cache.m.snap.loaded)
	}
}

func viewSpore(ctx context.Context, st *Store, id string) (state.Spore, error) {
	var sp state.Spore
	err := st.View(ctx, func(tx state.Tx) error {
		var err error
		sp, err = tx.Spore(ctx, id)
		return err
	})
	return sp, err
}

// Random creates, deletes, messages and reads, each by a fresh handle (as
// each command is), on snapshots found by bisection and compacted often
// (a compaction from a model that found its rows one by one writes every
// row): every read agrees with what was written.
func TestBisectedStoreAgreesWithWhatWasWritten(t *testing.T) {
	bisectSmall(t)
	ctx := context.Background()
	root := fleetStore(t, 300)
	opts := Options{CompactBytes: 16 << 10}
	want := map[string]int{} // id → queued messages
	for i := range 300 {
		want[fmt.Sprintf("s-%04d", i)] = map[bool]int{true: 1}[i%7 == 0]
	}
	rng := rand.New(rand.NewPCG(1, 2))
	randomID := func() string { return fmt.Sprintf("s-%04d", rng.IntN(400)) }
	for step := range 400 {
		st := openFresh(t, root, opts)
		id := randomID()
		_, exists := want[id]
		switch op := rng.IntN(4); op {
		case 0:
			err := st.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, storetest.Spore(id)) })
			if exists {
				require.ErrorIs(t, err, state.ErrExists, "step %d: create %s again", step, id)
			} else {
				require.NoError(t, err, "step %d", step)
				want[id] = 0
			}
		case 1:
			err := st.Update(ctx, func(tx state.Tx) error { return tx.DeleteSpore(ctx, id) })
			if exists {
				require.NoError(t, err, "step %d", step)
				delete(want, id)
			} else {
				require.ErrorIs(t, err, state.ErrNotFound, "step %d: delete %s", step, id)
			}
		case 2:
			if !exists {
				continue
			}
			require.NoError(t, st.Update(ctx, func(tx state.Tx) error {
				_, err := tx.Enqueue(ctx, state.OutboxEntry{ID: fmt.Sprintf("m-%d", step), Spore: id, From: "user:ann", Text: "hi"})
				return err
			}))
			want[id]++
		default:
			require.NoError(t, st.View(ctx, func(tx state.Tx) error {
				out, err := tx.Outbox(ctx, id)
				if !exists {
					require.ErrorIs(t, err, state.ErrNotFound, "step %d: %s", step, id)
					return nil
				}
				require.NoError(t, err)
				require.Len(t, out, want[id], "step %d: %s's outbox", step, id)
				return nil
			}))
		}
	}
	st := openFresh(t, root, opts)
	require.NoError(t, st.View(ctx, func(tx state.Tx) error {
		all, err := tx.Spores(ctx)
		require.NoError(t, err)
		var ids []string
		for _, s := range all {
			ids = append(ids, s.ID)
		}
		var wantIDs []string
		for id := range want {
			wantIDs = append(wantIDs, id)
		}
		slices.Sort(wantIDs)
		require.Equal(t, wantIDs, ids)
		pending, err := tx.Pending(ctx)
		require.NoError(t, err)
		for id, n := range want {
			require.Len(t, pending[id], n, "%s's pending", id)
		}
		return nil
	}))
	rep, err := st.Check(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "check: %+v", rep.Problems)
}

// rowLine is the 1-based line of state.json holding id's row, and the byte
// offset where it begins.
func rowLine(t *testing.T, root, id string) (int, int64) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, snapshotFile))
	require.NoError(t, err)
	off := int64(0)
	for i, line := range bytes.SplitAfter(b, []byte("\n")) {
		if bytes.Contains(line, []byte(`{"wish":{"id":"`+id+`"`)) {
			return i + 1, off
		}
		off += int64(len(line))
	}
	t.Fatalf("no row of %s", id)
	return 0, 0
}

// A damaged row found by bisection is refused by the read that finds it,
// naming the file and where its line begins; check names its line; the
// store is not rewritten.
func TestADamagedRowFoundByBisectionIsRefused(t *testing.T) {
	bisectSmall(t)
	ctx := context.Background()
	root := fleetStore(t, 300)
	n, off := rowLine(t, root, "s-0222")
	p := filepath.Join(root, snapshotFile)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	at := off + 40 // inside its payload
	b[at] ^= 0x01
	require.NoError(t, os.WriteFile(p, b, 0o600))
	sums := fileSums(t, root)

	st := openFresh(t, root, Options{})
	_, err = viewSpore(ctx, st, "s-0222")
	ce := requireCorrupt(t, err, snapshotFile)
	require.Equal(t, off, ce.Offset, "the line's start: %v", ce)
	require.Equal(t, n, ce.Line, "its line, as a whole read names it: %v", ce)
	require.Contains(t, ce.Reason, "checksum")
	err = st.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, storetest.Spore("s-0222")) })
	require.ErrorIs(t, err, state.ErrExists, "its id is taken: by a damaged row")
	// Its neighbours, found by bisection across its line, read as ever:
	// the damage is s-0222's alone.
	for _, id := range []string{"s-0221", "s-0223", "s-0000", "s-0299"} {
		_, err := viewSpore(ctx, st, id)
		require.NoError(t, err, id)
	}
	var all []state.Spore
	err = st.View(ctx, func(tx state.Tx) (err error) { all, err = tx.Spores(ctx); return err })
	ce = requireCorrupt(t, err, snapshotFile)
	require.Equal(t, n, ce.Line, "a whole read names the line")
	require.Len(t, all, 299, "and returns every other spore")
	rep, err := st.Check(ctx)
	require.NoError(t, err)
	requireProblem(t, rep, fmt.Sprintf("%s:%d", snapshotFile, n))
	require.Equal(t, sums, fileSums(t, root), "nothing rewritten")
}

// A row found by bisection whose checksum holds but which does not
// decode is named by its line when it is decoded: while the snapshot is
// open, and after a whole read has closed it.
func TestARowThatDoesNotDecodeIsNamedByItsLine(t *testing.T) {
	bisectSmall(t)
	ctx := context.Background()
	root := fleetStore(t, 300)
	n, off := rowLine(t, root, "s-0222")
	p := filepath.Join(root, snapshotFile)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	end := off + int64(bytes.IndexByte(b[off:], '\n'))
	payload := bytes.Replace(b[off+crcLen+1:end], []byte(`"size":0`), []byte(`"size":"none"`), 1)
	line := appendFrame(nil, payload)
	b = append(append(b[:off:off], line...), b[end+1:]...)
	require.NoError(t, os.WriteFile(p, b, 0o600))

	st := openFresh(t, root, Options{})
	_, err = viewSpore(ctx, st, "s-0222")
	ce := requireCorrupt(t, err, snapshotFile)
	require.Equal(t, n, ce.Line, "%v", ce)
	require.Equal(t, off, ce.Offset, "%v", ce)

	// Found first, decoded after the whole file was read and closed.
	f, err := os.Open(p)
	require.NoError(t, err)
	rows, err := openRows(f, int64(len(b)), formatVersion)
	require.NoError(t, err)
	l, err := rows.find("s-0222")
	require.NoError(t, err)
	require.NotNil(t, l)
	_, err = rows.content()
	require.NoError(t, err, "the whole read decodes no row")
	require.Nil(t, rows.f, "closed")
	_, err = l.get()
	ce = requireCorrupt(t, err, snapshotFile)
	require.Equal(t, n, ce.Line, "%v", ce)
}

// Rows out of order (only a hand with the format's checksums can make
// that) would mislead bisection: the whole read refuses them as damage,
// and so does check; a row the bisection finds out of place is never
// taken for absent, so no create replaces it.
func TestRowsOutOfOrderAreDamage(t *testing.T) {
	bisectSmall(t)
	ctx := context.Background()
	root := fleetStore(t, 300)
	p := filepath.Join(root, snapshotFile)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	lines := bytes.SplitAfter(b, []byte("\n"))
	n, _ := rowLine(t, root, "s-0150")
	lines[n-1], lines[n] = lines[n], lines[n-1] // s-0151 before s-0150
	require.NoError(t, os.WriteFile(p, bytes.Join(lines, nil), 0o600))
	sums := fileSums(t, root)

	st := openFresh(t, root, Options{})
	err = st.View(ctx, func(tx state.Tx) error { _, err := tx.Spores(ctx); return err })
	ce := requireCorrupt(t, err, snapshotFile)
	require.Contains(t, ce.Reason, "out of order")
	for _, id := range []string{"s-0150", "s-0151"} {
		st := openFresh(t, root, Options{})
		err := st.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, storetest.Spore(id)) })
		require.Error(t, err, "create %s over its own row", id)
		if !errors.Is(err, state.ErrExists) {
			requireCorrupt(t, err, snapshotFile)
		}
	}
	rep, err := st.Check(ctx)
	require.NoError(t, err)
	requireProblem(t, rep, fmt.Sprintf("%s:%d", snapshotFile, n+1))
	require.Equal(t, sums, fileSums(t, root), "nothing rewritten")
}

// A row of another shape than this format writes (keys in another
// order, as a hand might write it) cannot be ordered by its first bytes:
// the snapshot is then read whole, and every spore still reads.
func TestARowOfAnotherShapeIsReadWhole(t *testing.T) {
	bisectSmall(t)
	ctx := context.Background()
	root := fleetStore(t, 300)
	n, _ := rowLine(t, root, "s-0100")
	reframe(t, filepath.Join(root, snapshotFile), n, func(p []byte) []byte {
		// {"wish":{…},"status":{…},…} → {"status":{…},"wish":{…},…}
		s := string(p)
		wish := s[len(`{"wish":`):strings.Index(s, `,"status":`)]
		rest := s[strings.Index(s, `,"status":`)+1:]
		status := rest[len(`"status":`):strings.Index(rest, `,"log":`)]
		tail := rest[strings.Index(rest, `,"log":`):]
		return []byte(`{"status":` + status + `,"wish":` + wish + tail)
	})
	for _, id := range []string{"s-0100", "s-0000", "s-0299", "s-0101"} {
		st := openFresh(t, root, Options{})
		sp, err := viewSpore(ctx, st, id)
		require.NoError(t, err, "%s", id)
		require.Equal(t, id, sp.ID)
	}
}

// One handle's readers find rows of one snapshot at once, and one of them
// reads it whole meanwhile (serve's handle does): each reads what the
// file holds (run with -race).
func TestConcurrentFindsOnOneSnapshot(t *testing.T) {
	bisectSmall(t)
	ctx := context.Background()
	root := fleetStore(t, 500)
	st := openFresh(t, root, Options{})
	errs := make(chan error, 9)
	for g := range 8 {
		go func() {
			errs <- st.View(ctx, func(tx state.Tx) error {
				for i := range 60 {
					id := fmt.Sprintf("s-%04d", (g*61+i*7)%600)
					sp, err := tx.Spore(ctx, id)
					switch {
					case (g*61+i*7)%600 >= 500:
						if !errors.Is(err, state.ErrNotFound) {
							return fmt.Errorf("%s: want not found, got %v", id, err)
						}
					case err != nil:
						return err
					case sp.ID != id:
						return fmt.Errorf("asked for %s, read %s", id, sp.ID)
					}
				}
				return nil
			})
		}()
	}
	go func() {
		errs <- st.View(ctx, func(tx state.Tx) error {
			all, err := tx.Spores(ctx)
			if err == nil && len(all) != 500 {
				err = fmt.Errorf("read %d spores, want 500", len(all))
			}
			return err
		})
	}()
	for range 9 {
		require.NoError(t, <-errs)
	}
}
