package views

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/storetest"
)

// viewBytes counts the bytes projections write to views (staged files
// and appends) while the test runs.
func viewBytes(t *testing.T) *int64 {
	t.Helper()
	var mu sync.Mutex
	n := new(int64)
	stage, app := stageFile, appendFile
	stageFile = func(p string, b []byte) (string, error) {
		mu.Lock()
		*n += int64(len(b))
		mu.Unlock()
		return stage(p, b)
	}
	appendFile = func(p string, at int64, b []byte, want fileID) (fileID, error) {
		mu.Lock()
		*n += int64(len(b))
		mu.Unlock()
		return app(p, at, b, want)
	}
	t.Cleanup(func() { stageFile, appendFile = stage, app })
	return n
}

// eventsRead wraps st so that it counts the events its reads return.
type eventsRead struct {
	state.Store
	mu     sync.Mutex
	events int
	// change, when set, alters what the log says (a history rewritten).
	change func(state.Event) state.Event
}

func (s *eventsRead) View(ctx context.Context, fn func(state.Tx) error) error {
	return s.Store.View(ctx, func(tx state.Tx) error { return fn(eventsReadTx{tx, s}) })
}

type eventsReadTx struct {
	state.Tx
	s *eventsRead
}

func (t eventsReadTx) Events(ctx context.Context, id string, after uint64, limit int) ([]state.Event, error) {
	evs, err := t.Tx.Events(ctx, id, after, limit)
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	t.s.events += len(evs)
	if t.s.change != nil {
		for i := range evs {
			evs[i] = t.s.change(evs[i])
		}
	}
	return evs, err
}

// chatty makes spore "talky" with n events (a prompt and entries) and
// returns the Result of a pass over it.
func chatty(t testing.TB, st state.Store, n int) reconcile.Result {
	t.Helper()
	require.NoError(t, st.Update(context.Background(), func(tx state.Tx) error {
		return tx.CreateSpore(context.Background(), storetest.Spore("talky"))
	}))
	var last uint64
	for done := 0; done < n; {
		batch := make([]state.Event, min(5000, n-done))
		for i := range batch {
			batch[i] = lineEvent(done + i)
		}
		last = appendTo(t, st, "talky", batch...)
		done += len(batch)
	}
	return reconcile.Result{Spores: []reconcile.SporeHealth{health("talky", "lab", policy.Healthy, last)}}
}

// lineEvent is the i-th of a busy agent's lines: mostly tool calls (one
// paragraph of entries, the renderer's state across events), now and
// then text with a code fence that spans lines.
func lineEvent(i int) state.Event {
	line := fmt.Sprintf(`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":{"command":"go test ./pkg%d"}}]}}`, i)
	if i%50 == 0 {
		line = fmt.Sprintf(`{"type":"assistant","message":{"content":[{"type":"text","text":"step %d:\n`+"```"+`go\nfunc f() {}\n"}]}}`, i)
	}
	return state.Event{Kind: state.KindAgent, At: t0.Add(time.Duration(i) * time.Millisecond), BridgeSeq: uint64(i + 1), Line: json.RawMessage(line)}
}

func appendTo(t testing.TB, st state.Store, id string, evs ...state.Event) uint64 {
	t.Helper()
	var last uint64
	require.NoError(t, st.Update(context.Background(), func(tx state.Tx) error {
		out, err := tx.Append(context.Background(), id, evs)
		if err == nil {
			last = out[len(out)-1].Seq
		}
		return err
	}))
	return last
}

// fullRender is the views a projection makes in an empty directory: the
// transcripts rendered whole.
func fullRender(t *testing.T, st state.Store, res reconcile.Result) map[string]fileSnap {
	t.Helper()
	d := &Dir{Path: filepath.Join(t.TempDir(), "views")}
	_, err := d.Project(t.Context(), st, res, Partial)
	require.NoError(t, err)
	return snapshot(t, d.Path)
}

// One new line of a spore with a long history costs the store a read of
// that line and of the one before (the transcript's last, still the log's),
// and the view the bytes of its rendering and of the new stamp: nothing
// grows with the history.
func TestOneNewLineReadsAndWritesOnlyWhatIsNew(t *testing.T) {
	st := &eventsRead{Store: newStore(t)}
	res := chatty(t, st, 3000)
	d := &Dir{Path: filepath.Join(t.TempDir(), "views"), PageSize: 500}
	_, err := d.Project(t.Context(), st, res, Full)
	require.NoError(t, err)
	p := filepath.Join(d.Path, transcriptPath("talky"))
	before, err := os.Stat(p)
	require.NoError(t, err)

	st.events = 0
	written := viewBytes(t)
	res.Spores[0].LastSeq = appendTo(t, st, "talky", lineEvent(3000))
	got, err := d.Project(t.Context(), st, res, Full)
	require.NoError(t, err)
	require.Contains(t, got, "transcripts/talky.md")
	require.Equal(t, 2, st.events, "the transcript's last event and the new one")
	after, err := os.Stat(p)
	require.NoError(t, err)
	grew := after.Size() - before.Size()
	require.Greater(t, grew, int64(0))
	// The new entry, the closing and the stamp, over the old closing and
	// stamp; fleet.json and STATUS.md are a few hundred bytes more.
	require.Less(t, *written, int64(2048), "of a %d-byte transcript", after.Size())
	require.Equal(t, fullRender(t, st, res)["transcripts/talky.md"].data, snapshot(t, d.Path)["transcripts/talky.md"].data)
}

// The pool the random histories are drawn from: every line of the golden
// conversations and some of a busy agent's.
func eventPool(t *testing.T) []state.Event {
	pool := conversation(t)
	for i := range 60 {
		pool = append(pool, lineEvent(i))
	}
	pool = append(pool,
		state.Event{Kind: state.KindAgent, Line: json.RawMessage(`{"type":"assistant","message":{"content":[{"type":"text","text":"open fence\n~~~~\nnever closed"}]}}`)},
		state.Event{Kind: state.KindPrompt, From: "user:a", Text: "```\nquoted fence"},
		state.Event{Kind: state.KindAgent, Line: json.RawMessage(`"not json"`)},
		note(t0, "slept"))
	return pool
}

// However a history grows — one event a pass or thousands, paragraphs of
// entries and fenced text split across passes, pages of any size — a
// transcript kept up to date by appends is byte for byte the one a
// projection renders whole, and after the first projection none is
// rendered whole.
func TestAppendedTranscriptIsTheWholeRendering(t *testing.T) {
	pool := eventPool(t)
	for seed := range uint64(16) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 35))
			st := newStore(t)
			// Two events: a read after 0 is then a rendering whole.
			last := appendEvents(t, st, "s", true, note(t0, "created"), note(t0, "woke"))
			res := reconcile.Result{Spores: []reconcile.SporeHealth{health("s", "lab", policy.Healthy, last)}}
			d := &Dir{Path: filepath.Join(t.TempDir(), "views"), PageSize: 1 + r.IntN(9)}
			_, err := d.Project(t.Context(), st, res, Full)
			require.NoError(t, err)
			st.reset()
			for pass := range 10 {
				n := 1 + r.IntN(4)
				if r.IntN(6) == 0 {
					n = 20 + r.IntN(40)
				}
				evs := make([]state.Event, n)
				for i := range evs {
					evs[i] = pool[r.IntN(len(pool))]
					evs[i].At = t0.Add(time.Duration(pass*100+i) * time.Second)
				}
				res.Spores[0].LastSeq = appendEvents(t, st, "s", false, evs...)
				written, err := d.Project(t.Context(), st, res, Full)
				require.NoError(t, err)
				require.Contains(t, written, "transcripts/s.md")
				require.Equal(t, fullRender(t, st, res)["transcripts/s.md"].data, snapshot(t, d.Path)["transcripts/s.md"].data, "pass %d", pass)
			}
			require.Equal(t, map[string]int{"s": 10}, st.reset(), "only the whole renderings the comparison made")
		})
	}
}

// A projection killed in the middle of an append leaves the transcript
// with part of the new bytes written and the stamps file as it was. The
// next projection finds the file is not what its last stamp says,
// whatever the cut, and renders it whole.
func TestTornAppendIsRenderedAgain(t *testing.T) {
	st := newStore(t)
	res := fleet(t, st)
	d := &Dir{Path: filepath.Join(t.TempDir(), "views")}
	_, err := d.Project(t.Context(), st, res, Full)
	require.NoError(t, err)
	stampsPath := filepath.Join(d.Path, StampsFile)
	p := filepath.Join(d.Path, transcriptPath("beta"))
	base, baseStamps := readFile(t, p), readFile(t, stampsPath)

	// Two entries: the first joins the open paragraph, so the first byte
	// written replaces the old closing ("\n") with another.
	res.Spores[1].LastSeq = appendEvents(t, st, "beta", false, lineEvent(1), lineEvent(2))
	want := fullRender(t, st, res)["transcripts/beta.md"].data
	var data []byte
	app := appendFile
	t.Cleanup(func() { appendFile = app })
	appendFile = func(_ string, _ int64, b []byte, _ fileID) (fileID, error) {
		data = b
		return fileID{}, errors.New("measured")
	}
	_, err = d.Project(t.Context(), st, res, Full)
	require.ErrorContains(t, err, "measured")
	require.NotEmpty(t, data)
	require.Equal(t, byte('\\'), data[0], "the first byte is not the closing it replaces")

	for cut := range len(data) {
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			// The transcript and stamps as the last projection left them,
			// then the append cut at cut bytes, and the process gone.
			require.NoError(t, os.WriteFile(p, base, filePerm))
			require.NoError(t, os.WriteFile(stampsPath, baseStamps, filePerm))
			crashed := baseStamps
			appendFile = func(p string, at int64, b []byte, want fileID) (fileID, error) {
				f, err := os.OpenFile(p, os.O_WRONLY, 0)
				require.NoError(t, err)
				defer f.Close()
				_, err = f.WriteAt(b[:cut], at)
				require.NoError(t, err)
				return fileID{}, syscall.EINTR
			}
			_, err := d.Project(t.Context(), st, res, Full)
			require.Error(t, err)
			require.NoError(t, os.WriteFile(stampsPath, crashed, filePerm), "the crash came before the stamps")

			appendFile = app
			written, err := d.Project(t.Context(), st, res, Full)
			require.NoError(t, err)
			require.Contains(t, written, "transcripts/beta.md")
			require.Equal(t, want, string(readFile(t, p)), "rendered whole again")
		})
	}
}

// A transcript whose file or log changed since it was written is not
// appended to: it is rendered whole, and comes out as a projection from
// nothing makes it.
func TestChangedHistoryOrFileIsRenderedWhole(t *testing.T) {
	later := time.Now().Add(time.Minute)
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, st *eventsRead, views string, res *reconcile.Result)
	}{
		{"a line of the file edited, its size kept", func(t *testing.T, _ *eventsRead, views string, _ *reconcile.Result) {
			p := filepath.Join(views, transcriptPath("beta"))
			b := readFile(t, p)
			i := bytes.Index(b, []byte("hello"))
			require.Positive(t, i)
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteAt([]byte("HELLO"), int64(i))
			require.NoError(t, err)
			require.NoError(t, f.Close())
			require.NoError(t, os.Chtimes(p, later, later))
		}},
		{"the stamp of another format", func(t *testing.T, _ *eventsRead, views string, _ *reconcile.Result) {
			p := filepath.Join(views, transcriptPath("beta"))
			b := readFile(t, p)
			require.NoError(t, os.WriteFile(p, bytes.Replace(b, []byte("transcript v3 "), []byte("transcript v2 "), 1), filePerm))
		}},
		{"the log rewritten (a repair renumbered it)", func(t *testing.T, st *eventsRead, _ string, _ *reconcile.Result) {
			st.change = func(ev state.Event) state.Event {
				ev.At = ev.At.Add(time.Second)
				return ev
			}
		}},
		{"a repair recorded", func(t *testing.T, st *eventsRead, _ string, res *reconcile.Result) {
			res.Spores[1].LastSeq = appendEvents(t, st, "beta", false, note(t0.Add(time.Hour), repairedAction))
		}},
		{"the transcript removed", func(t *testing.T, _ *eventsRead, views string, _ *reconcile.Result) {
			require.NoError(t, os.Remove(filepath.Join(views, transcriptPath("beta"))))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			counting := newStore(t)
			st := &eventsRead{Store: counting}
			res := fleet(t, st)
			d := &Dir{Path: filepath.Join(t.TempDir(), "views")}
			_, err := d.Project(t.Context(), st, res, Full)
			require.NoError(t, err)
			counting.reset()

			tc.change(t, st, d.Path, &res)
			res.Spores[1].LastSeq = appendEvents(t, st, "beta", false, lineEvent(1))
			written, err := d.Project(t.Context(), st, res, Full)
			require.NoError(t, err)
			require.Contains(t, written, "transcripts/beta.md")
			require.Equal(t, 1, counting.renders["beta"], "rendered whole")
			require.Equal(t, fullRender(t, st, res)["transcripts/beta.md"].data, snapshot(t, d.Path)["transcripts/beta.md"].data)
		})
	}
}

// What a transcript ends with, read back: only a stamp exactly as String
// writes it is one.
func TestParseStamp(t *testing.T) {
	s := stamp{format: 3, lastSeq: 42, created: "2026-05-01T09:00:00Z", last: "00ff", open: true, body: 99, crc: 0xabc}
	back, ok := parseStamp(s.String())
	require.True(t, ok)
	require.Equal(t, s, back)
	for _, bad := range []string{
		strings.Replace(s.String(), "open=1", "open=2", 1),
		strings.Replace(s.String(), "body=99", "body=-1", 1),
		strings.Replace(s.String(), "body=99", "body=099", 1),
		strings.Replace(s.String(), "last_seq=42", "last_seq=x", 1),
		strings.TrimSuffix(s.String(), "\n"),
		s.String()[1:],
		strings.Replace(s.String(), " crc32c=00000abc", "", 1),
		strings.Replace(s.String(), "last=00ff", "last=00\nt", 1),
		strings.Replace(s.String(), "last=00ff", "last=", 1),
	} {
		_, ok := parseStamp(bad)
		require.False(t, ok, "%q", bad)
	}
}
