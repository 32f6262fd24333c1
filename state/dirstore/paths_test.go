package dirstore

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/storetest"
)

// Names in the store's own files are data, not paths (format §4), and the
// store never follows a link among its own files (format §1). Each test
// here plants something that would make a command read, truncate, append
// to or remove a file outside the store, and checks that every entry point
// refuses it as damage naming the file (and line), that the outside file
// is untouched, and that nothing in the store is rewritten.

// reframe replaces line n (1-based) of the framed file p with what edit
// makes of its payload, with a correct checksum: damage a checksum cannot
// see, as a person or a tool with the format at hand would make it.
func reframe(t *testing.T, p string, n int, edit func(payload []byte) []byte) {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	lines := bytes.SplitAfter(b, []byte("\n"))
	require.Less(t, n-1, len(lines))
	line := lines[n-1]
	payload, bad := unframe(line[:len(line)-1])
	require.Empty(t, bad)
	edited := edit(bytes.Clone(payload))
	require.NotEqual(t, payload, edited, "the edit changed nothing")
	lines[n-1] = appendFrame(nil, edited)
	require.NoError(t, os.WriteFile(p, bytes.Join(lines, nil), 0o600))
}

// victim is a file next to the store that no command may touch.
func victim(t *testing.T, root string) (string, []byte) {
	t.Helper()
	p := filepath.Join(filepath.Dir(root), "victim.txt")
	content := []byte("not the store's\n")
	require.NoError(t, os.WriteFile(p, content, 0o600))
	return p, content
}

func requireUntouched(t *testing.T, p string, content []byte) {
	t.Helper()
	got, err := os.ReadFile(p)
	require.NoError(t, err, "the file outside the store was removed")
	require.Equal(t, string(content), string(got), "the file outside the store was changed")
}

// everyCommand runs what sporectl's commands do to a store — open it, read
// a spore's events, stop it (append a lifecycle event), delete it, check
// it — each on a handle that never saw the store, and returns their
// errors and the check report.
func everyCommand(t *testing.T, root, id string) (errs map[string]error, rep *state.CheckReport) {
	t.Helper()
	ctx := context.Background()
	errs = map[string]error{}
	_, errs["open"] = Open(ctx, root, Options{})
	_, _, errs["init"] = Init(ctx, root, state.Settings{Runtime: "local"}, Options{})
	errs["events"] = unloaded(root).View(ctx, func(tx state.Tx) error {
		_, err := tx.Events(ctx, id, 0, 0)
		return err
	})
	errs["stop"] = unloaded(root).Update(ctx, func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, id)
		if err != nil {
			return err
		}
		sp.Desired = state.Paused
		if _, err := storetest.Put(ctx, tx, sp); err != nil {
			return err
		}
		_, err = tx.Append(ctx, id, []state.Event{{Kind: state.KindLifecycle, Action: "stopped"}})
		return err
	})
	errs["delete"] = unloaded(root).Update(ctx, func(tx state.Tx) error { return tx.DeleteSpore(ctx, id) })
	rep, err := unloaded(root).Check(ctx)
	require.NoError(t, err)
	return errs, rep
}

// TestLogNameFromStoreIsNotAPath: a row whose event-log name is not
// "<its id>.<tx>.log" — a path out of the store, another spore's log, a
// name from a later transaction — is corruption of the snapshot or commit
// log line that holds it, for every command: nothing is opened, truncated,
// appended to or removed, in the store or outside it, and check names it.
func TestLogNameFromStoreIsNotAPath(t *testing.T) {
	setName := func(name string) func([]byte) []byte {
		return func(p []byte) []byte {
			return bytes.Replace(p, []byte(`"file":"alpha.1.log"`), fmt.Appendf(nil, `"file":%q`, name), 1)
		}
	}
	// alpha's row: line 2 of state.json, and its row in the last record
	// of txlog.2 (line headerLines+3).
	where := []struct {
		name string
		file string
		line int
	}{
		{"snapshot row", snapshotFile, 2},
		{"commit log record", txlogName(2), headerLines + 3},
	}
	names := map[string]string{
		"parent path":       "../../victim.txt",
		"absolute path":     "", // filled in with the victim's path
		"separator":         "alpha.1.log/../../../victim.txt",
		"another's log":     "beta.1.log",
		"leading zero":      "alpha.01.log",
		"later transaction": "alpha.99.log",
		"no tx":             "alpha.log",
		"empty":             "",
	}
	for _, w := range where {
		for what, name := range names {
			t.Run(w.name+"/"+what, func(t *testing.T) {
				root := populated(t)
				vp, vc := victim(t, root)
				if what == "absolute path" {
					name = vp
				}
				reframe(t, filepath.Join(root, w.file), w.line, setName(name))
				betaLog := filepath.Join(root, eventsDir, "beta.1.log")
				beta, err := os.ReadFile(betaLog)
				require.NoError(t, err)
				sums := fileSums(t, root)

				errs, rep := everyCommand(t, root, "alpha")
				for cmd, err := range errs {
					ce := requireCorrupt(t, err, w.file)
					require.Equal(t, w.line, ce.Line, "%s: %v", cmd, err)
					require.Contains(t, ce.Reason, "event log", "%s: %v", cmd, err)
				}
				requireProblem(t, rep, fmt.Sprintf("%s:%d", w.file, w.line))

				requireUntouched(t, vp, vc)
				requireUntouched(t, betaLog, beta)
				require.Equal(t, sums, fileSums(t, root), "a command rewrote the store")
			})
		}
	}
}

// TestBadSporeIDInStore: a row keyed by something that is not a spore id
// (here one with a separator) is corruption for every command, so no
// caller — the dir store or a runtime building a home from the id — gets
// an id from the store that the id grammar would refuse.
func TestBadSporeIDInStore(t *testing.T) {
	root := populated(t)
	vp, vc := victim(t, root)
	reframe(t, filepath.Join(root, snapshotFile), 2, func(p []byte) []byte {
		p = bytes.Replace(p, []byte(`"id":"alpha"`), []byte(`"id":"../alpha"`), 1)
		return bytes.Replace(p, []byte(`"file":"alpha.1.log"`), []byte(`"file":"../alpha.1.log"`), 1)
	})
	sums := fileSums(t, root)
	errs, rep := everyCommand(t, root, "alpha")
	for cmd, err := range errs {
		ce := requireCorrupt(t, err, snapshotFile)
		require.Equal(t, 2, ce.Line, "%s: %v", cmd, err)
		require.Contains(t, ce.Reason, "spore id", "%s", cmd)
	}
	requireProblem(t, rep, snapshotFile+":2")
	requireUntouched(t, vp, vc)
	require.Equal(t, sums, fileSums(t, root))
}

// TestLinksInStoreAreDamage: a symbolic link (or a hard link, or a FIFO)
// where the store keeps one of its own files is never followed: each
// command that would read, write or remove through it fails with a
// CorruptError naming the file, the file outside is untouched, and check
// reports it as a problem.
func TestLinksInStoreAreDamage(t *testing.T) {
	ctx := context.Background()
	// plant replaces the store's file rel by a link to a copy of it
	// outside the store (so following the link would work), and returns
	// the copy.
	symlinkTo := func(t *testing.T, root, rel string) (string, []byte) {
		t.Helper()
		p := filepath.Join(root, rel)
		out := filepath.Join(filepath.Dir(root), "outside-"+filepath.Base(rel))
		require.NoError(t, os.Rename(p, out))
		require.NoError(t, os.Symlink(out, p))
		b, err := os.ReadFile(out)
		if err != nil {
			b = nil // a directory
		}
		return out, b
	}
	alphaLog := eventsDir + "/alpha.1.log"
	tests := []struct {
		name  string
		plant func(t *testing.T, root string) (outside string, content []byte)
		// file the errors name; check reports it too.
		file string
		// openFails: every command fails, Open included. Otherwise only
		// what touches alpha's log does (events, stop, delete).
		openFails bool
	}{
		{
			name:  "event log is a symlink",
			plant: func(t *testing.T, root string) (string, []byte) { return symlinkTo(t, root, alphaLog) },
			file:  alphaLog,
		},
		{
			name: "event log is a hard link",
			plant: func(t *testing.T, root string) (string, []byte) {
				p := filepath.Join(root, alphaLog)
				out := filepath.Join(filepath.Dir(root), "outside-alpha.log")
				require.NoError(t, os.Link(p, out))
				b, err := os.ReadFile(out)
				require.NoError(t, err)
				return out, b
			},
			file: alphaLog,
		},
		{
			name: "event log is a FIFO",
			plant: func(t *testing.T, root string) (string, []byte) {
				p := filepath.Join(root, alphaLog)
				require.NoError(t, os.Remove(p))
				require.NoError(t, syscall.Mkfifo(p, 0o600))
				return "", nil
			},
			file: alphaLog,
		},
		{
			name:      "events directory is a symlink",
			plant:     func(t *testing.T, root string) (string, []byte) { return symlinkTo(t, root, eventsDir) },
			file:      eventsDir,
			openFails: true,
		},
		{
			name:      "snapshot is a symlink",
			plant:     func(t *testing.T, root string) (string, []byte) { return symlinkTo(t, root, snapshotFile) },
			file:      snapshotFile,
			openFails: true,
		},
		{
			name:      "commit log is a symlink",
			plant:     func(t *testing.T, root string) (string, []byte) { return symlinkTo(t, root, txlogName(2)) },
			file:      txlogName(2),
			openFails: true,
		},
		{
			name: "commit log is a hard link",
			plant: func(t *testing.T, root string) (string, []byte) {
				p := filepath.Join(root, txlogName(2))
				out := filepath.Join(filepath.Dir(root), "outside-txlog")
				require.NoError(t, os.Link(p, out))
				b, err := os.ReadFile(out)
				require.NoError(t, err)
				return out, b
			},
			file: txlogName(2),
			// Readers may read it; every writer refuses.
		},
		{
			name: "FORMAT is a symlink",
			plant: func(t *testing.T, root string) (string, []byte) {
				return symlinkTo(t, root, formatFile)
			},
			openFails: true,
		},
		{
			name: "lock file is a symlink",
			plant: func(t *testing.T, root string) (string, []byte) {
				return symlinkTo(t, root, lockFile)
			},
			file: lockFile,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root := populated(t)
			outside, content := tc.plant(t, root)
			file := tc.file
			if file == "" {
				file = filepath.Join(root, formatFile)
			}
			sums := fileSums(t, root)

			done := make(chan struct{})
			var errs map[string]error
			var rep *state.CheckReport
			go func() {
				defer close(done)
				errs, rep = everyCommand(t, root, "alpha")
			}()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatal("a command blocked on what is planted in the store")
			}

			refused := map[string]bool{"events": true, "stop": true, "delete": true}
			switch {
			case tc.openFails:
				refused["open"], refused["init"] = true, true
			case strings.HasPrefix(tc.name, "commit log"), strings.HasPrefix(tc.name, "lock"):
				// Only writers touch it.
				refused = map[string]bool{"stop": true, "delete": true}
			case tc.name == "event log is a hard link":
				refused = map[string]bool{"stop": true} // read, or removed by name: harmless
			}
			for cmd, err := range errs {
				if !refused[cmd] {
					require.NoError(t, err, cmd)
					continue
				}
				ce := requireCorrupt(t, err, file)
				require.NotEmpty(t, ce.Reason, cmd)
			}
			if tc.name == "event log is a hard link" {
				// The delete removed alpha (and only the store's name of
				// its log); the outside name keeps its bytes.
				requireUntouched(t, outside, content)
				return
			}
			if strings.HasPrefix(tc.name, "FORMAT") {
				// Check reads FORMAT first and stops there.
				require.False(t, rep.OK())
			} else {
				requireProblem(t, rep, file)
			}
			if content != nil {
				requireUntouched(t, outside, content)
			}
			require.Equal(t, sums, fileSums(t, root), "a command rewrote the store")
			// A store still refused is still refused by a fresh check.
			rep, err := unloaded(root).Check(ctx)
			require.NoError(t, err)
			require.False(t, rep.OK())
		})
	}
}

// TestTornDirIsNoLink: saving a torn commit tail never writes through a
// link: with torn/ a symlink to a directory outside, the writer that would
// save the tail fails with a CorruptError naming torn/ and writes nothing
// there.
func TestTornDirIsNoLink(t *testing.T) {
	ctx := context.Background()
	root := populated(t)
	out := filepath.Join(filepath.Dir(root), "outside-torn")
	require.NoError(t, os.Mkdir(out, 0o700))
	require.NoError(t, os.Symlink(out, filepath.Join(root, tornDir)))
	f, err := os.OpenFile(filepath.Join(root, txlogName(2)), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`0badf00d {"tx":7,"rows":{"alpha"`)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	err = unloaded(root).Update(ctx, func(tx state.Tx) error {
		_, err := tx.Append(ctx, "alpha", []state.Event{{Kind: state.KindPrompt, Text: "x"}})
		return err
	})
	requireCorrupt(t, err, tornDir)
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	require.Empty(t, entries, "a torn tail was written through the link")
	rep, err := unloaded(root).Check(ctx)
	require.NoError(t, err)
	requireProblem(t, rep, tornDir)
}

// TestOrphanLinkLeftAlone: a symlink in events/ named like an event log
// that no row names is not removed by the writer's sweep (a link is not
// the store's to remove; removing one never follows it either), and check
// reports it as a problem.
func TestOrphanLinkLeftAlone(t *testing.T) {
	ctx := context.Background()
	root := populated(t)
	vp, vc := victim(t, root)
	link := filepath.Join(root, eventsDir, "zeta.4.log")
	require.NoError(t, os.Symlink(vp, link))
	require.NoError(t, unloaded(root).Update(ctx, func(tx state.Tx) error {
		_, err := tx.Append(ctx, "alpha", []state.Event{{Kind: state.KindPrompt, Text: "x"}})
		return err
	}))
	_, err := os.Lstat(link)
	require.NoError(t, err)
	requireUntouched(t, vp, vc)
	rep, err := unloaded(root).Check(ctx)
	require.NoError(t, err)
	requireProblem(t, rep, eventsDir+"/zeta.4.log")
}

// TestLogNames: what parseLogName takes for an event log's name, and what
// it refuses.
func TestLogNames(t *testing.T) {
	good := map[string]struct {
		id string
		tx uint64
	}{
		"a.1.log":                    {"a", 1},
		"alpha-7.1041.log":           {"alpha-7", 1041},
		"x.18446744073709551615.log": {"x", 18446744073709551615},
	}
	for name, want := range good {
		id, tx, ok := parseLogName(name)
		require.True(t, ok, name)
		require.Equal(t, want.id, id, name)
		require.Equal(t, want.tx, tx, name)
	}
	for _, name := range []string{
		"", "a", "a.log", "a..log", "a.0.log", "a.01.log", "a.1.LOG", "a.1.log.x", "a.1.logx",
		"A.1.log", "a-.1.log", "1a.1.log", "../a.1.log", "a/b.1.log", "a.1/.log", "a.1.log/",
		"a.+1.log", "a.-1.log", "a. 1.log", "a.18446744073709551616.log", ".1.log", "a.1\x00.log",
		strings.Repeat("a", state.MaxIDLen+1) + ".1.log",
	} {
		_, _, ok := parseLogName(name)
		require.False(t, ok, "%q", name)
	}
}

// TestMissingEventsDir: a store without events/ is damaged, named as such.
func TestMissingEventsDir(t *testing.T) {
	root := populated(t)
	require.NoError(t, os.RemoveAll(filepath.Join(root, eventsDir)))
	_, err := Open(context.Background(), root, Options{})
	ce := requireCorrupt(t, err, eventsDir)
	require.Contains(t, ce.Reason, "missing")
	rep, err := unloaded(root).Check(context.Background())
	require.NoError(t, err)
	requireProblem(t, rep, eventsDir)
}
