package dirstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/storetest"
)

// Damage a store the way a person or a disk would, then check that every
// reader names the damaged file and line, that Check reports a problem, and
// that nothing on disk is rewritten by Open, View, Check or a writer.

// populated builds a store whose every file has several lines:
//
//	state.json   header + rows alpha, beta, gamma (gen 2, by a compaction)
//	txlog.2      its 2 header lines and 3 transactions
//	events/      alpha.1.log 6 events, beta.1.log 2, gamma.1.log 1
//
// and returns its root.
func populated(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	s := newTestStore(t, Options{})
	root := s.root
	update := func(s *Store, fn func(tx state.Tx) error) {
		t.Helper()
		require.NoError(t, s.Update(ctx, fn))
	}
	appendEvents := func(tx state.Tx, id string, n int) error {
		evs := make([]state.Event, n)
		for i := range evs {
			evs[i] = state.Event{Kind: state.KindPrompt, From: "user:test", Text: fmt.Sprintf("prompt to %s #%d", id, i)}
		}
		_, err := tx.Append(ctx, id, evs)
		return err
	}
	update(s, func(tx state.Tx) error {
		for _, id := range []string{"alpha", "beta", "gamma"} {
			if err := tx.CreateSpore(ctx, storetest.Spore(id)); err != nil {
				return err
			}
		}
		return nil
	})
	update(s, func(tx state.Tx) error {
		if _, err := tx.Enqueue(ctx, state.OutboxEntry{ID: "m1", Spore: "beta", From: "user:test", Text: "hello"}); err != nil {
			return err
		}
		return appendEvents(tx, "alpha", 3)
	})
	// A second handle with a tiny threshold folds the log into state.json.
	c, err := Open(ctx, root, Options{CompactBytes: 1})
	require.NoError(t, err)
	update(c, func(tx state.Tx) error { return appendEvents(tx, "beta", 2) })
	update(s, func(tx state.Tx) error { return appendEvents(tx, "alpha", 2) })
	update(s, func(tx state.Tx) error {
		if err := tx.SetTokenHash(ctx, "alpha", state.HashToken("secret")); err != nil {
			return err
		}
		return appendEvents(tx, "gamma", 1)
	})
	update(s, func(tx state.Tx) error {
		if _, err := tx.Enqueue(ctx, state.OutboxEntry{ID: "m2", Spore: "gamma", From: "spore:alpha", Text: "hi"}); err != nil {
			return err
		}
		return appendEvents(tx, "alpha", 1)
	})

	// The layout the cases below rely on.
	require.Equal(t, 4, countLines(t, filepath.Join(root, snapshotFile)))
	require.NoFileExists(t, filepath.Join(root, txlogName(1)))
	require.Equal(t, headerLines+3, countLines(t, filepath.Join(root, txlogName(2))))
	require.Equal(t, 6, countLines(t, filepath.Join(root, eventsDir, "alpha.1.log")))
	rep, err := s.Check(ctx)
	require.NoError(t, err)
	require.Empty(t, rep.Problems)
	require.Empty(t, rep.Notes)
	return root
}

func countLines(t *testing.T, p string) int {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return bytes.Count(b, []byte("\n"))
}

// fileSums is the content of every file and directory under root.
func fileSums(t *testing.T, root string) map[string]string {
	t.Helper()
	sums := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, _ := filepath.Rel(root, p)
		if d.IsDir() {
			sums[r+"/"] = "dir"
			return nil
		}
		if !d.Type().IsRegular() {
			// A link or a FIFO planted by a test: never read through.
			sums[r] = d.Type().String()
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		h := sha256.Sum256(b)
		sums[r] = hex.EncodeToString(h[:])
		return nil
	})
	require.NoError(t, err)
	return sums
}

// unloaded is the handle Open builds before its first read: a process
// that starts after the damage. Check must work where Open refuses.
func unloaded(root string) *Store {
	opts := Options{}
	opts.defaults()
	return newStore(root, opts)
}

// storeDump is everything a caller can see through the Store API.
type storeDump = storetest.Dump

func dumpStore(ctx context.Context, st state.Store) (*storeDump, error) {
	return storetest.ReadAll(ctx, st)
}

func mustDump(t *testing.T, st state.Store) *storeDump {
	t.Helper()
	d, err := dumpStore(context.Background(), st)
	require.NoError(t, err)
	return d
}

// flipByte flips one bit of the byte at off in place (same inode, as a
// disk or an editor writing in place would) and returns the line it hit.
func flipByte(t *testing.T, p string, off int) int {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Less(t, off, len(b))
	require.NotEqual(t, byte('\n'), b[off], "flip a byte inside a line")
	line := lineOf(b, off)
	b[off] ^= 0x01
	require.NotEqual(t, byte('\n'), b[off])
	require.NoError(t, os.WriteFile(p, b, 0o600))
	return line
}

// middleOfLine returns the offset of the middle byte of line n (1-based).
func middleOfLine(t *testing.T, p string, n int) int {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	start := 0
	for range n - 1 {
		i := bytes.IndexByte(b[start:], '\n')
		require.GreaterOrEqual(t, i, 0)
		start += i + 1
	}
	end := start + bytes.IndexByte(b[start:], '\n')
	require.Greater(t, end, start)
	return start + (end-start)/2
}

func requireProblem(t *testing.T, rep *state.CheckReport, where string) {
	t.Helper()
	require.False(t, rep.OK(), "check found nothing wrong")
	var all []string
	for _, p := range rep.Problems {
		if p.Where == where {
			return
		}
		all = append(all, p.Where+": "+p.Message)
	}
	t.Fatalf("no problem at %q; problems: %q", where, all)
}

func TestCorruption(t *testing.T) {
	ctx := context.Background()
	alphaLog := filepath.Join(eventsDir, "alpha.1.log")

	type result struct {
		file string // the file errors must name
		line int    // and its line; 0: the error names the file only
	}
	tests := []struct {
		name string
		// damage breaks the store and returns where the damage is.
		damage func(t *testing.T, root string) result
		// openFails: Open refuses the store. Otherwise only the damaged
		// spore's events are unreadable.
		openFails bool
		// where Check must report the problem; "" means "file:line".
		checkWhere func(root string, r result) string
		// blindAppend: a writer that appends to alpha without reading its
		// log succeeds (writers never read event logs, format §5).
		blindAppend bool
		// blindErr, when set, is what the blind writer's error names
		// instead of the readers'.
		blindErr *result
		// gate: FORMAT is damaged. Only Open, Init and Check read FORMAT
		// (format §1: nothing else is read), so only they are exercised.
		gate bool
		// checkErr: Check returns an error rather than a report.
		checkErr func(t *testing.T, err error)
		wantErr  func(t *testing.T, root string, r result, err error)
	}{
		// A row of state.json damaged in place (a flipped bit, a hand
		// edit) is its spore's damage alone, not a store that does not
		// open: repair_test.go's TestARowsDamagedLineIsItsSporesAlone.
		{
			name: "txlog middle line byte flipped",
			damage: func(t *testing.T, root string) result {
				p := filepath.Join(root, txlogName(2))
				return result{txlogName(2), flipByte(t, p, middleOfLine(t, p, headerLines+2))}
			},
			openFails: true,
		},
		{
			name: "txlog middle line hand-edited",
			damage: func(t *testing.T, root string) result {
				p := filepath.Join(root, txlogName(2))
				b, err := os.ReadFile(p)
				require.NoError(t, err)
				lines := bytes.SplitAfter(b, []byte("\n"))
				k := headerLines + 1 // the second record
				edited := bytes.Replace(lines[k], []byte(`"desired":"Paused"`), []byte(`"desired":"Running"`), 1)
				require.NotEqual(t, lines[k], edited)
				lines[k] = edited
				require.NoError(t, os.WriteFile(p, bytes.Join(lines, nil), 0o600))
				return result{txlogName(2), k + 1}
			},
			openFails: true,
		},
		{
			name: "event log middle line byte flipped",
			damage: func(t *testing.T, root string) result {
				p := filepath.Join(root, alphaLog)
				return result{eventsDir + "/alpha.1.log", flipByte(t, p, middleOfLine(t, p, 4))}
			},
			blindAppend: true,
		},
		{
			name: "event log truncated below its committed size",
			damage: func(t *testing.T, root string) result {
				p := filepath.Join(root, alphaLog)
				// Cut inside line 5: lines 1-4 stay whole.
				require.NoError(t, os.Truncate(p, int64(middleOfLine(t, p, 5))))
				return result{eventsDir + "/alpha.1.log", 5}
			},
			checkWhere: func(root string, r result) string { return r.file },
			// The writer compares the log's size with the committed size.
			blindErr: &result{file: eventsDir + "/alpha.1.log"},
		},
		{
			name: "FORMAT holds garbage",
			damage: func(t *testing.T, root string) result {
				require.NoError(t, os.WriteFile(filepath.Join(root, formatFile), []byte("PK\x03\x04 not a store\n"), 0o600))
				return result{filepath.Join(root, formatFile), 1}
			},
			openFails: true,
			gate:      true,
		},
		{
			name: "FORMAT names a newer version",
			damage: func(t *testing.T, root string) result {
				require.NoError(t, os.WriteFile(filepath.Join(root, formatFile), []byte(formatMagic+"\nformat 99\n"), 0o600))
				return result{file: filepath.Join(root, formatFile)}
			},
			openFails: true,
			gate:      true,
			checkErr: func(t *testing.T, err error) {
				// A newer format is not read at all, so not checked either.
				var ie *state.IncompatibleError
				require.ErrorAs(t, err, &ie)
			},
			wantErr: func(t *testing.T, root string, r result, err error) {
				var ie *state.IncompatibleError
				require.ErrorAs(t, err, &ie)
				require.Equal(t, 99, ie.Found)
				require.Equal(t, formatVersion, ie.Newest)
				require.Contains(t, err.Error(), "upgrade sporectl")
			},
		},
		{
			name: "live txlog deleted",
			damage: func(t *testing.T, root string) result {
				require.NoError(t, os.Remove(filepath.Join(root, txlogName(2))))
				return result{file: txlogName(2)}
			},
			openFails: true,
			wantErr: func(t *testing.T, root string, r result, err error) {
				requireCorrupt(t, err, r.file)
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := populated(t)
			r := tc.damage(t, root)
			wantErr := tc.wantErr
			if wantErr == nil {
				wantErr = func(t *testing.T, root string, r result, err error) {
					t.Helper()
					ce := requireCorrupt(t, err, r.file)
					require.Equal(t, r.line, ce.Line, "%v", err)
					want := r.file
					if r.line > 0 {
						want += fmt.Sprintf(":%d", r.line)
					}
					require.Contains(t, err.Error(), want)
				}
			}
			sums := fileSums(t, root)

			// Readers: Open refuses the store, or opens it and only the
			// damaged log is unreadable.
			st, err := Open(ctx, root, Options{})
			if tc.openFails {
				require.Error(t, err)
				wantErr(t, root, r, err)
				_, created, err := Init(ctx, root, state.Settings{Runtime: "local"}, Options{})
				wantErr(t, root, r, err)
				require.False(t, created)
				st = unloaded(root)
				if !tc.gate {
					err = st.View(ctx, func(tx state.Tx) error { return nil })
					wantErr(t, root, r, err)
				}
			} else {
				require.NoError(t, err)
				spores := view(t, st, func(tx state.Tx) ([]state.Spore, error) { return tx.Spores(ctx) })
				require.Len(t, spores, 3)
				err = st.View(ctx, func(tx state.Tx) error {
					_, err := tx.Events(ctx, "alpha", 0, 0)
					return err
				})
				wantErr(t, root, r, err)
				// The undamaged logs still read.
				evs := view(t, st, func(tx state.Tx) ([]state.Event, error) { return tx.Events(ctx, "beta", 0, 0) })
				require.Len(t, evs, 2)
			}

			// Check never calls it sound.
			rep, err := st.Check(ctx)
			if tc.checkErr != nil {
				require.Nil(t, rep)
				tc.checkErr(t, err)
			} else {
				require.NoError(t, err)
				where := fmt.Sprintf("%s:%d", r.file, r.line)
				if r.line == 0 {
					where = r.file
				}
				if tc.checkWhere != nil {
					where = tc.checkWhere(root, r)
				}
				requireProblem(t, rep, where)
			}

			blind := func(tx state.Tx) error {
				_, err := tx.Append(ctx, "alpha", []state.Event{{Kind: state.KindPrompt, Text: "blind"}})
				return err
			}
			if !tc.gate {
				// A writer that reads the damaged log first fails...
				err = st.Update(ctx, func(tx state.Tx) error {
					if _, err := tx.Events(ctx, "alpha", 0, 0); err != nil {
						return err
					}
					return blind(tx)
				})
				wantErr(t, root, r, err)
				// ...and so does one that appends blindly, unless only the
				// log's content is damaged.
				if !tc.blindAppend {
					err = st.Update(ctx, blind)
					if tc.blindErr != nil {
						wantErr(t, root, *tc.blindErr, err)
					} else {
						wantErr(t, root, r, err)
					}
				}
			}

			// Nothing was rewritten, not even the damaged bytes.
			require.Equal(t, sums, fileSums(t, root))

			if tc.blindAppend {
				// Appending after damage leaves the damaged bytes as they
				// are, and Check keeps reporting them.
				before, err := os.ReadFile(filepath.Join(root, alphaLog))
				require.NoError(t, err)
				require.NoError(t, st.Update(ctx, blind))
				after, err := os.ReadFile(filepath.Join(root, alphaLog))
				require.NoError(t, err)
				require.Greater(t, len(after), len(before))
				require.Equal(t, before, after[:len(before)])
				rep, err := unloaded(root).Check(ctx)
				require.NoError(t, err)
				requireProblem(t, rep, fmt.Sprintf("%s:%d", r.file, r.line))
			}
		})
	}
}

func view[T any](t *testing.T, s state.Store, fn func(tx state.Tx) (T, error)) T {
	t.Helper()
	var v T
	require.NoError(t, s.View(context.Background(), func(tx state.Tx) error {
		var err error
		v, err = fn(tx)
		return err
	}))
	return v
}

// TestTornCommitTail: bytes without an end of line after the last commit
// record are a commit that never finished (format §6). Readers ignore
// them, Check notes them, and the next writer saves them under torn/,
// drops them and carries on.
func TestTornCommitTail(t *testing.T) {
	ctx := context.Background()
	root := populated(t)
	before := mustDump(t, unloaded(root))
	logPath := filepath.Join(root, txlogName(2))
	good, err := os.ReadFile(logPath)
	require.NoError(t, err)
	garbage := []byte(`5a7a9525 {"tx":99,"at":"2026-11-30T00:05:56Z","rows":{"alpha":nu`)
	require.NoError(t, os.WriteFile(logPath, append(bytes.Clone(good), garbage...), 0o600))
	sums := fileSums(t, root)

	st, err := Open(ctx, root, Options{})
	require.NoError(t, err)
	require.Equal(t, before, mustDump(t, st))
	rep, err := st.Check(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "problems: %v", rep.Problems)
	require.Len(t, rep.Notes, 1)
	require.Equal(t, txlogName(2), rep.Notes[0].Where)
	require.Contains(t, rep.Notes[0].Message, "torn tail")
	require.Equal(t, sums, fileSums(t, root), "readers and Check must not touch a torn tail")

	var got []state.Event
	require.NoError(t, st.Update(ctx, func(tx state.Tx) error {
		var err error
		got, err = tx.Append(ctx, "alpha", []state.Event{{Kind: state.KindPrompt, Text: "after the crash"}})
		return err
	}))
	require.Equal(t, before.Heads["alpha"].LastSeq+1, got[0].Seq)

	saved, err := os.ReadFile(filepath.Join(root, tornDir, fmt.Sprintf("%s.%d", txlogName(2), len(good))))
	require.NoError(t, err)
	require.Equal(t, garbage, saved)
	after, err := os.ReadFile(logPath)
	require.NoError(t, err)
	// The header's slots are rewritten in place by every commit (format
	// §3); the records never are.
	require.Equal(t, good[headerSize:], after[headerSize:len(good)], "committed records were rewritten")
	require.Equal(t, 1, bytes.Count(after[len(good):], []byte("\n")), "want exactly the new record after the good ones")
	require.NotContains(t, string(after), string(garbage))

	rep, err = unloaded(root).Check(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "problems: %v", rep.Problems)
	for _, n := range rep.Notes {
		require.True(t, strings.HasPrefix(n.Where, tornDir+"/"), "unexpected note %v", n)
	}
	want := *before
	want.Heads = map[string]state.SporeHead{"alpha": {LastSeq: got[0].Seq}, "beta": before.Heads["beta"], "gamma": before.Heads["gamma"]}
	want.Events = map[string][]state.Event{"alpha": append(slices.Clone(before.Events["alpha"]), got...), "beta": before.Events["beta"], "gamma": before.Events["gamma"]}
	requireDumpEqual(t, &want, mustDump(t, unloaded(root)))
}

// requireDumpEqual compares dumps; times compare with Equal, since a value
// read back from disk carries no monotonic clock reading.
func requireDumpEqual(t *testing.T, want, got *storeDump) {
	t.Helper()
	norm := func(d *storeDump) *storeDump {
		c := *d
		c.Events = map[string][]state.Event{}
		for id, evs := range d.Events {
			for _, e := range evs {
				e.At = e.At.UTC().Round(0)
				c.Events[id] = append(c.Events[id], e)
			}
		}
		return &c
	}
	require.Equal(t, norm(want), norm(got))
}

func TestOpenNotAStore(t *testing.T) {
	ctx := context.Background()
	t.Run("missing path", func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "nothing", "here")
		_, err := Open(ctx, root, Options{})
		require.ErrorIs(t, err, state.ErrNoStore)
		require.NoDirExists(t, root, "Open must not create anything")
	})
	t.Run("non-empty directory", func(t *testing.T) {
		parent := t.TempDir()
		root := filepath.Join(parent, "home")
		require.NoError(t, os.MkdirAll(filepath.Join(root, "sub"), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(root, "notes.txt"), []byte("mine\n"), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(root, "state.json"), []byte("{\"not\":\"ours\"}\n"), 0o600))
		sums := fileSums(t, parent)

		_, err := Open(ctx, root, Options{})
		require.ErrorIs(t, err, state.ErrNoStore)

		s, created, err := Init(ctx, root, state.Settings{Runtime: "local"}, Options{})
		require.Error(t, err)
		require.Nil(t, s)
		require.False(t, created)
		var ue *state.UnavailableError
		require.ErrorAs(t, err, &ue)
		require.Contains(t, err.Error(), "not empty")
		// Not a byte changed, and no temporary sibling left behind.
		require.Equal(t, sums, fileSums(t, parent))
	})
}

// TestMissingCommitLog: a store whose live commit log is gone while its
// snapshot is current is damaged (format §8), and every entry point says
// so by name, rather than taking it for a compaction race and retrying.
func TestMissingCommitLog(t *testing.T) {
	ctx := context.Background()
	root := populated(t)
	require.NoError(t, os.Remove(filepath.Join(root, txlogName(2))))

	_, err := Open(ctx, root, Options{})
	ce := requireCorrupt(t, err, txlogName(2))
	require.Contains(t, ce.Error(), txlogName(2))

	rep, err := unloaded(root).Check(ctx)
	require.NoError(t, err)
	requireProblem(t, rep, txlogName(2))
}

// TestOpenOnFile: a path that is a regular file is not a store
// (ErrNoStore, "is a file"), not an unavailable one.
func TestOpenOnFile(t *testing.T) {
	root := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(root, []byte("x"), 0o600))
	_, err := Open(context.Background(), root, Options{})
	require.ErrorIs(t, err, state.ErrNoStore)
	require.Contains(t, err.Error(), "is a file, not a store directory")
}

// TestCheckReadsAfresh: Check reads everything from disk, even on a handle
// that has loaded the store before, so damage to records it had already
// read is reported.
func TestCheckReadsAfresh(t *testing.T) {
	ctx := context.Background()
	root := populated(t)
	st, err := Open(ctx, root, Options{})
	require.NoError(t, err)
	p := filepath.Join(root, txlogName(2))
	line := flipByte(t, p, middleOfLine(t, p, headerLines+2))

	// A new process sees it...
	_, err = Open(ctx, root, Options{})
	requireCorrupt(t, err, txlogName(2))
	// ...and so must Check on the handle opened before.
	rep, err := st.Check(ctx)
	require.NoError(t, err)
	requireProblem(t, rep, fmt.Sprintf("%s:%d", txlogName(2), line))
}

// TestSnapshotRowCountBoundsAllocation: the header's "rows" is data, not
// a size to trust. Pre-sizing the row map from it (as decodeSnapshot once
// did) lets a header claiming billions of rows kill the process with
// "fatal error: out of memory" instead of returning a CorruptError. A
// header alone must not cost memory in proportion to its claim.
func TestSnapshotRowCountBoundsAllocation(t *testing.T) {
	header := fmt.Appendf(nil, `{"format":%d,"gen":1,"tx":0,"rows":%d,"settings":{"runtime":"local","default_spec":{}}}`, formatVersion, 1<<22)
	data := appendFrame(nil, header)
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	_, err := decodeSnapshotFrom(snapshotFile, data, formatVersion)
	runtime.ReadMemStats(&ms1)
	ce := requireCorrupt(t, err, snapshotFile)
	require.Contains(t, ce.Reason, "header says")
	require.Less(t, ms1.TotalAlloc-ms0.TotalAlloc, uint64(4<<20), "bytes allocated to decode a %d-byte snapshot", len(data))
}

// TestCheckValidatesRows: a row that frames and decodes but breaks a rule
// of the record (format §8) — a status observed at a generation above its
// wish's, a health that is not a health state's name — is a problem that
// Check names by spore. Commands still read the store: rows are checked
// for their paths as they are read, not validated whole (format §1).
func TestCheckValidatesRows(t *testing.T) {
	ctx := context.Background()
	// edit changes the record in the payload of a row.
	edit := func(change func(*state.Spore)) func([]byte) []byte {
		return func(p []byte) []byte {
			var j rowJSON
			require.NoError(t, json.Unmarshal(p, &j))
			sp := state.Spore{Wish: *j.Wish, Status: *j.Status}
			change(&sp)
			j.Wish, j.Status = &sp.Wish, &sp.Status
			b, err := json.Marshal(j)
			require.NoError(t, err)
			return b
		}
	}
	tests := []struct {
		name string
		edit func([]byte) []byte
		want string
	}{
		{
			name: "observed generation above the generation",
			edit: edit(func(sp *state.Spore) { sp.Generation, sp.ObservedGeneration = 2, 3 }),
			want: "observed generation",
		},
		{
			name: "health breaks the grammar",
			edit: edit(func(sp *state.Spore) { sp.Health = "dead; rm -rf" }),
			want: "health",
		},
		{
			name: "a negative model usage",
			edit: edit(func(sp *state.Spore) {
				sp.ModelUsage = []state.HourUsage{{Hour: time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC), Calls: 1, Usage: state.Usage{OutputTokens: -4}}}
			}),
			want: "model usage",
		},
		{
			name: "a model call counted twice",
			edit: edit(func(sp *state.Spore) {
				h := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
				sp.ModelCalls = []state.CountedCall{{ID: "msg_1", Hour: h}, {ID: "msg_2", Hour: h}, {ID: "msg_1", Hour: h}}
			}),
			want: `model call "msg_1" is counted twice`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := populated(t)
			// Beta's row is line 3 of state.json (rows are sorted by id).
			reframe(t, filepath.Join(root, snapshotFile), 3, func(p []byte) []byte {
				require.Contains(t, string(p), `"id":"beta"`)
				return tc.edit(p)
			})
			sums := fileSums(t, root)
			st, err := Open(ctx, root, Options{})
			require.NoError(t, err)
			rep, err := st.Check(ctx)
			require.NoError(t, err)
			requireProblem(t, rep, "spore beta")
			require.Len(t, rep.Problems, 1, "%v", rep.Problems)
			require.Contains(t, rep.Problems[0].Message, tc.want)
			require.Equal(t, sums, fileSums(t, root))
		})
	}
}

// TestRowFormIsTheFormats: a row holds exactly its format's form of the
// spore record (format §3): in a format-5 snapshot or commit log a flat
// "spore" (the form of formats 1 to 4), or a row without its "status", is
// corruption of its line for every command, never a row read halfway.
func TestRowFormIsTheFormats(t *testing.T) {
	// A format-5 payload turned into the form of format 4.
	flatten := func(p []byte) []byte {
		var j rowJSON
		require.NoError(t, json.Unmarshal(p, &j))
		require.NotNil(t, j.Wish)
		require.NotNil(t, j.Status)
		b, err := json.Marshal(rowJSON{Spore: &state.Spore{Wish: *j.Wish, Status: *j.Status}, Log: j.Log, Outbox: j.Outbox, Token: j.Token})
		require.NoError(t, err)
		return b
	}
	// The same edit inside a commit-log record (alpha's row in its last
	// record, line headerLines+3).
	inRecord := func(edit func([]byte) []byte) func([]byte) []byte {
		return func(p []byte) []byte {
			var rec map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(p, &rec))
			var rows map[string]json.RawMessage
			require.NoError(t, json.Unmarshal(rec["rows"], &rows))
			rows["alpha"] = edit(rows["alpha"])
			b, err := json.Marshal(rows)
			require.NoError(t, err)
			rec["rows"] = b
			b, err = json.Marshal(rec)
			require.NoError(t, err)
			return b
		}
	}
	noStatus := func(p []byte) []byte {
		var j rowJSON
		require.NoError(t, json.Unmarshal(p, &j))
		j.Status = nil
		b, err := json.Marshal(j)
		require.NoError(t, err)
		return b
	}
	tests := []struct {
		name   string
		file   string
		line   int
		edit   func([]byte) []byte
		reason string
	}{
		{"snapshot row flat", snapshotFile, 2, flatten, `"spore"`},
		{"snapshot row without status", snapshotFile, 2, noStatus, `"status"`},
		{"commit log row flat", txlogName(2), headerLines + 3, inRecord(flatten), `"spore"`},
		{"commit log row without status", txlogName(2), headerLines + 3, inRecord(noStatus), `"status"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := populated(t)
			reframe(t, filepath.Join(root, tc.file), tc.line, tc.edit)
			sums := fileSums(t, root)
			errs, rep := everyCommand(t, root, "alpha")
			for cmd, err := range errs {
				ce := requireCorrupt(t, err, tc.file)
				require.Equal(t, tc.line, ce.Line, "%s: %v", cmd, err)
				require.Contains(t, ce.Reason, tc.reason, "%s: %v", cmd, err)
			}
			requireProblem(t, rep, fmt.Sprintf("%s:%d", tc.file, tc.line))
			require.Equal(t, sums, fileSums(t, root), "a command rewrote the store")
		})
	}
}
