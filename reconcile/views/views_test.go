package views

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
	"github.com/sporectl/sporectl/state/storetest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/views")

var goldenDir = filepath.Join("..", "..", "testdata", "views")

func golden(t *testing.T, file string, got []byte) {
	t.Helper()
	p := filepath.Join(goldenDir, file)
	if *update {
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, got, 0o644))
		return
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "missing golden file; run go test ./reconcile/views -update")
	require.Equal(t, string(want), string(got), "output differs from %s (rerun with -update if the change is intended)", p)
}

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

// countingStore counts, per spore, the reads of a log from its start (a
// transcript rendered) and all event reads.
type countingStore struct {
	state.Store
	mu      sync.Mutex
	renders map[string]int
	reads   int
}

func (s *countingStore) View(ctx context.Context, fn func(state.Tx) error) error {
	return s.Store.View(ctx, func(tx state.Tx) error { return fn(countingTx{tx, s}) })
}

type countingTx struct {
	state.Tx
	s *countingStore
}

func (t countingTx) Events(ctx context.Context, id string, after uint64, limit int) ([]state.Event, error) {
	t.s.mu.Lock()
	t.s.reads++
	if after == 0 {
		t.s.renders[id]++
	}
	t.s.mu.Unlock()
	return t.Tx.Events(ctx, id, after, limit)
}

func (s *countingStore) reset() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.renders
	s.renders, s.reads = map[string]int{}, 0
	return r
}

func newStore(t *testing.T) *countingStore {
	t.Helper()
	return &countingStore{Store: statetest.Dir(t, state.Settings{Runtime: "local"}), renders: map[string]int{}}
}

// appendEvents adds evs to spore id (creating it first when create) and
// returns the log's last seq.
func appendEvents(t *testing.T, st state.Store, id string, create bool, evs ...state.Event) uint64 {
	t.Helper()
	var last uint64
	require.NoError(t, st.Update(t.Context(), func(tx state.Tx) error {
		if create {
			if err := tx.CreateSpore(t.Context(), storetest.Spore(id)); err != nil {
				return err
			}
		}
		if len(evs) > 0 {
			if _, err := tx.Append(t.Context(), id, evs); err != nil {
				return err
			}
		}
		h, err := tx.Head(t.Context(), id)
		last = h.LastSeq
		return err
	}))
	return last
}

func conversation(t *testing.T) []state.Event {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "testdata", "transcript", "conversation.jsonl"))
	require.NoError(t, err)
	defer f.Close()
	var evs []state.Event
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ev state.Event
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev))
		if state.ValidKind(ev.Kind) { // the store refuses the rest
			evs = append(evs, ev)
		}
	}
	return evs
}

func note(at time.Time, action string) state.Event {
	return state.Event{Kind: state.KindLifecycle, At: at, Action: action}
}

func health(id, colony string, eff policy.Health, lastSeq uint64) reconcile.SporeHealth {
	h := reconcile.SporeHealth{ID: id, Colony: colony, Rank: state.RankSpore, Desired: state.Running,
		Observed:  reconcile.Observed{Pod: reconcile.PodRunning, Bridge: reconcile.BridgeUp, Activity: bridge.StateIdle},
		Effective: eff, LastSeq: lastSeq, Created: t0.Add(-time.Hour)}
	switch eff {
	case policy.Paused:
		h.Desired, h.Observed = state.Paused, reconcile.Observed{Pod: reconcile.PodAbsent, Bridge: reconcile.BridgeDown}
	case policy.Dead:
		h.Observed = reconcile.Observed{Pod: reconcile.PodAbsent, Bridge: reconcile.BridgeDown, Restarts: 2, Reason: reconcile.ReasonOOMKilled}
		h.Code, h.Reason = reconcile.ReasonOOMKilled, "OOMKilled"
	}
	return h
}

// fleet makes three spores with events and the Result of a pass over them.
func fleet(t *testing.T, st state.Store) reconcile.Result {
	t.Helper()
	a := appendEvents(t, st, "alpha", true, note(t0, "created"), note(t0.Add(time.Second), "woke"))
	b := appendEvents(t, st, "beta", true, conversation(t)...)
	c := appendEvents(t, st, "gamma", true)
	return reconcile.Result{Spores: []reconcile.SporeHealth{
		health("alpha", "lab", policy.Healthy, a),
		health("beta", "lab", policy.Dead, b),
		health("gamma", "hq", policy.Paused, c),
	}}
}

type fileSnap struct {
	ino   uint64
	mtime time.Time
	data  string
}

func snapshot(t *testing.T, dir string) map[string]fileSnap {
	t.Helper()
	out := map[string]fileSnap{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == filepath.Join(dir, StampsFile) {
			return err // the stamps are not a view: stamps_test.go
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = fileSnap{fi.Sys().(*syscall.Stat_t).Ino, fi.ModTime(), string(b)}
		return nil
	}))
	return out
}

// countWrites counts calls of the write and remove seams for the test.
func countWrites(t *testing.T) *int {
	t.Helper()
	n := new(int)
	write, remove := stageFile, removeFile
	stageFile = func(p string, b []byte) (string, error) { *n++; return write(p, b) }
	removeFile = func(p string) error { *n++; return remove(p) }
	t.Cleanup(func() { stageFile, removeFile = write, remove })
	return n
}

func TestProjectTwiceWritesNothing(t *testing.T) {
	st := newStore(t)
	res := fleet(t, st)
	d := &Dir{Path: filepath.Join(t.TempDir(), "views")}
	writes := countWrites(t)

	written, err := d.Project(t.Context(), st, res, Full)
	require.NoError(t, err)
	require.Equal(t, []string{"STATUS.md", "fleet.json", "transcripts/alpha.md", "transcripts/beta.md", "transcripts/gamma.md"}, written)
	require.Equal(t, 5, *writes)
	require.Equal(t, map[string]int{"alpha": 1, "beta": 1}, st.reset(), "gamma has no events to read")
	before := snapshot(t, d.Path)

	*writes = 0
	written, err = d.Project(t.Context(), st, res, Full)
	require.NoError(t, err)
	require.Empty(t, written)
	require.Zero(t, *writes, "a projection with nothing changed writes nothing")
	require.Empty(t, st.renders, "and renders no transcript")
	require.Equal(t, before, snapshot(t, d.Path), "same inodes, times and bytes")
}

func TestChangedSporeRendersOnlyItsTranscript(t *testing.T) {
	st := newStore(t)
	res := fleet(t, st)
	d := &Dir{Path: filepath.Join(t.TempDir(), "views"), PageSize: 7}
	_, err := d.Project(t.Context(), st, res, Full)
	require.NoError(t, err)
	before := snapshot(t, d.Path)
	st.reset()

	res.Spores[1].LastSeq = appendEvents(t, st, "beta", false, state.Event{Kind: state.KindPrompt, At: t0.Add(time.Hour), From: "user:bob", Text: "again"})
	written, err := d.Project(t.Context(), st, res, Full)
	require.NoError(t, err)
	require.Equal(t, []string{"STATUS.md", "fleet.json", "transcripts/beta.md"}, written)
	require.Empty(t, st.renders, "the new event appended, the log not read from its start")
	after := snapshot(t, d.Path)
	require.Equal(t, before["transcripts/alpha.md"], after["transcripts/alpha.md"])
	require.Contains(t, after["transcripts/beta.md"].data, "prompt from user:bob")
	beta := after["transcripts/beta.md"].data
	require.Contains(t, beta[strings.LastIndex(beta[:len(beta)-1], "\n")+1:], "<!-- sporectl transcript v3 last_seq=30 created=2026-05-01T09:00:00Z ", "the stamp ends the file")

	// Paged reading (7 at a time) renders what one read does.
	one := &Dir{Path: filepath.Join(t.TempDir(), "views")}
	_, err = one.Project(t.Context(), st, res, Full)
	require.NoError(t, err)
	require.Equal(t, after, stripIDs(snapshot(t, one.Path), after))
}

// stripIDs gives got the inodes and times of like, to compare bytes only.
func stripIDs(got, like map[string]fileSnap) map[string]fileSnap {
	for k, v := range got {
		v.ino, v.mtime = like[k].ino, like[k].mtime
		got[k] = v
	}
	return got
}

func TestMissingOrEditedTranscriptIsRebuilt(t *testing.T) {
	st := newStore(t)
	res := fleet(t, st)
	d := &Dir{Path: filepath.Join(t.TempDir(), "views")}
	_, err := d.Project(t.Context(), st, res, Partial)
	require.NoError(t, err)
	want := snapshot(t, d.Path)

	require.NoError(t, os.Remove(filepath.Join(d.Path, "transcripts", "alpha.md")))
	require.NoError(t, os.WriteFile(filepath.Join(d.Path, "transcripts", "beta.md"), []byte("edited\n"), 0o600))
	written, err := d.Project(t.Context(), st, res, Partial)
	require.NoError(t, err)
	require.Equal(t, []string{"transcripts/alpha.md", "transcripts/beta.md"}, written)
	got := snapshot(t, d.Path)
	require.Equal(t, want["transcripts/alpha.md"].data, got["transcripts/alpha.md"].data)
	require.Equal(t, want["transcripts/beta.md"].data, got["transcripts/beta.md"].data)
}

func TestPartialTouchesOnlyNamedSpores(t *testing.T) {
	st := newStore(t)
	res := fleet(t, st)
	d := &Dir{Path: filepath.Join(t.TempDir(), "views")}
	_, err := d.Project(t.Context(), st, res, Full)
	require.NoError(t, err)
	before := snapshot(t, d.Path)

	alpha := res.Spores[0]
	alpha.LastSeq = appendEvents(t, st, "alpha", false, note(t0.Add(time.Minute), "slept"))
	alpha.Effective = policy.Paused
	written, err := d.Project(t.Context(), st, reconcile.Result{Spores: []reconcile.SporeHealth{alpha}}, Partial)
	require.NoError(t, err)
	require.Equal(t, []string{"transcripts/alpha.md"}, written, "fleet.json and STATUS.md are the last full pass's")
	after := snapshot(t, d.Path)
	for _, f := range []string{"fleet.json", "STATUS.md", "transcripts/beta.md", "transcripts/gamma.md"} {
		require.Equal(t, before[f], after[f], f)
	}
	require.Contains(t, after["transcripts/alpha.md"].data, "slept")
}

func TestDeletedSporeTranscriptRemovedOnlyOnFullPass(t *testing.T) {
	st := newStore(t)
	res := fleet(t, st)
	d := &Dir{Path: filepath.Join(t.TempDir(), "views")}
	_, err := d.Project(t.Context(), st, res, Full)
	require.NoError(t, err)
	other := filepath.Join(d.Path, "transcripts", "NOTES.txt")
	require.NoError(t, os.WriteFile(other, []byte("mine"), 0o600))

	require.NoError(t, st.Update(t.Context(), func(tx state.Tx) error { return tx.DeleteSpore(t.Context(), "beta") }))
	res.Spores = append(res.Spores[:1], res.Spores[2:]...)

	written, err := d.Project(t.Context(), st, reconcile.Result{Spores: res.Spores[:1]}, Partial)
	require.NoError(t, err)
	require.Empty(t, written)
	require.FileExists(t, filepath.Join(d.Path, "transcripts", "beta.md"))

	written, err = d.Project(t.Context(), st, res, Full)
	require.NoError(t, err)
	require.Equal(t, []string{"STATUS.md", "fleet.json", "transcripts/beta.md"}, written)
	require.NoFileExists(t, filepath.Join(d.Path, "transcripts", "beta.md"))
	require.FileExists(t, other, "files that are not transcripts are left alone")
	require.NotContains(t, snapshot(t, d.Path)["fleet.json"].data, "beta")
}

// A spore deleted and created again under its id, with as many events as
// before, still gets its new transcript: the stamp holds its creation
// time too.
func TestRecreatedSporeIsRendered(t *testing.T) {
	st := newStore(t)
	n := appendEvents(t, st, "alpha", true, note(t0, "created"))
	res := reconcile.Result{Spores: []reconcile.SporeHealth{health("alpha", "lab", policy.Paused, n)}}
	d := &Dir{Path: filepath.Join(t.TempDir(), "views")}
	_, err := d.Project(t.Context(), st, res, Full)
	require.NoError(t, err)

	require.NoError(t, st.Update(t.Context(), func(tx state.Tx) error { return tx.DeleteSpore(t.Context(), "alpha") }))
	require.Equal(t, n, appendEvents(t, st, "alpha", true, note(t0.Add(time.Hour), "created")))
	res.Spores[0].Created = t0.Add(time.Hour) // as the next pass sees it
	written, err := d.Project(t.Context(), st, res, Partial)
	require.NoError(t, err)
	require.Equal(t, []string{"transcripts/alpha.md"}, written)
	require.Contains(t, snapshot(t, d.Path)["transcripts/alpha.md"].data, "11:00:00Z")
}

func TestInvalidIDNeverAPath(t *testing.T) {
	st := newStore(t)
	res := fleet(t, st)
	root := t.TempDir()
	d := &Dir{Path: filepath.Join(root, "views")}
	bad := health("../../escape", "lab", policy.Dead, 3)
	res.Spores = append(res.Spores, bad, health("Upper", "lab", policy.Healthy, 1))
	written, err := d.Project(t.Context(), st, res, Full)
	require.Error(t, err)
	require.Contains(t, err.Error(), `spore id`)
	require.Contains(t, written, "transcripts/alpha.md", "the other spores are projected")
	require.Contains(t, written, "fleet.json")
	require.NoFileExists(t, filepath.Join(root, "escape.md"))
	ents, err := os.ReadDir(filepath.Join(d.Path, "transcripts"))
	require.NoError(t, err)
	require.Len(t, ents, 3)
}

func TestWriteFailureIsReportedAndOthersGoOn(t *testing.T) {
	st := newStore(t)
	res := fleet(t, st)
	d := &Dir{Path: filepath.Join(t.TempDir(), "views")}
	write := stageFile
	t.Cleanup(func() { stageFile = write })
	stageFile = func(p string, b []byte) (string, error) {
		if filepath.Base(p) == "beta.md" {
			return "", syscall.ENOSPC
		}
		return write(p, b)
	}
	written, err := d.Project(t.Context(), st, res, Full)
	require.ErrorIs(t, err, syscall.ENOSPC)
	require.Contains(t, err.Error(), "beta.md")
	require.Equal(t, []string{"STATUS.md", "fleet.json", "transcripts/alpha.md", "transcripts/gamma.md"}, written)

	stageFile = write
	written, err = d.Project(t.Context(), st, res, Full)
	require.NoError(t, err)
	require.Equal(t, []string{"transcripts/beta.md"}, written)
}

func TestNoTempFilesLeft(t *testing.T) {
	st := newStore(t)
	res := fleet(t, st)
	d := &Dir{Path: filepath.Join(t.TempDir(), "views")}
	_, err := d.Project(t.Context(), st, res, Full)
	require.NoError(t, err)
	for f := range snapshot(t, d.Path) {
		require.False(t, strings.HasPrefix(filepath.Base(f), "."), "temporary file %s left behind", f)
	}
}

// goldenResult has every effective state, a swarm, orphans, and hostile
// text where a pass's text may come from outside (reasons, orphan ids).
func goldenResult() reconcile.Result {
	h := func(id, colony string, eff policy.Health, code reconcile.Reason, reason string, o reconcile.Observed) reconcile.SporeHealth {
		return reconcile.SporeHealth{ID: id, Colony: colony, Rank: state.RankSpore, Desired: state.Running,
			Observed: o, Effective: eff, Code: code, Reason: reason, LastSeq: 12, Created: t0.Add(-time.Hour)}
	}
	up := reconcile.Observed{Pod: reconcile.PodRunning, Bridge: reconcile.BridgeUp, Activity: bridge.StateIdle}
	down := reconcile.Observed{Pod: reconcile.PodAbsent, Bridge: reconcile.BridgeDown}
	arch := h("arch-1", "hq", policy.Healthy, "", "", up)
	arch.Rank = state.RankArch
	myco := h("lab-myco", "lab", policy.Healthy, "", "", reconcile.Observed{Pod: reconcile.PodRunning, Bridge: reconcile.BridgeUp, Activity: bridge.StateWorking, Restarts: 1, Reason: reconcile.ReasonOOMKilled})
	myco.Rank, myco.Pending = state.RankColony, 2
	worker := h("worker-7", "lab", policy.Dead, reconcile.ReasonOOMKilled, "OOMKilled", reconcile.Observed{Pod: reconcile.PodAbsent, Bridge: reconcile.BridgeDown, Restarts: 3, Reason: reconcile.ReasonOOMKilled})
	worker.Swarm, worker.Role = "build", "tester"
	hostile := h("xss", "lab", policy.Suspect, reconcile.ReasonBridgeNotAnswer,
		"<script>alert(1)</script> | injected | cell\n| new | row |\x1b[31m", reconcile.Observed{Pod: reconcile.PodRunning, Bridge: reconcile.BridgeDown, Reason: reconcile.ReasonBridgeNotAnswer})
	blocked := h("asker", "lab", policy.Blocked, reconcile.ReasonAgentBlocked, "the agent waits for a person", reconcile.Observed{Pod: reconcile.PodRunning, Bridge: reconcile.BridgeUp, Activity: bridge.StateBlocked})
	broken := h("crashy", "lab", policy.Error, reconcile.ReasonBreakerOpen, "circuit breaker open after repeated crashes; run `sporectl reset`", down)
	asleep := h("sleepy", "hq", policy.Paused, "", "", down)
	asleep.Desired = state.Paused
	off := h("off", "hq", policy.Stopped, "", "", down)
	off.Desired, off.LastSeq = state.Stopped, 0
	return reconcile.Result{
		// Out of order on purpose: views sort.
		Spores:  []reconcile.SporeHealth{worker, arch, myco, hostile, blocked, broken, asleep, off},
		Orphans: []string{"zombie-2", "evil|<b>x</b>", "zombie-2"},
	}
}

func TestGoldenFleetAndStatus(t *testing.T) {
	res := goldenResult()
	fleet, err := fleetJSON(fleetOf(res))
	require.NoError(t, err)
	golden(t, "fleet.json", fleet)
	status := statusMarkdown(fleetOf(res))
	golden(t, "STATUS.md", status)

	require.NotContains(t, string(fleet), "<", "fleet.json escapes HTML")
	for i, c := range status {
		if c == '<' {
			require.Equal(t, byte('\\'), status[i-1], "a raw < in STATUS.md at %d", i)
		}
	}
	require.NotContains(t, string(status), "\x1b")
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "| ") && strings.Contains(l, "xss") {
			require.Equal(t, 11, strings.Count(l, "|")-strings.Count(l, `\|`), "the hostile reason adds no column: %s", l)
		}
	}
	var back struct {
		Spores []struct {
			ID     string `json:"id"`
			Reason string `json:"reason"`
		} `json:"spores"`
		Orphans []string `json:"orphans"`
	}
	require.NoError(t, json.Unmarshal(fleet, &back))
	require.Equal(t, "arch-1", back.Spores[0].ID)
	require.Equal(t, []string{"evil|<b>x</b>", "zombie-2"}, back.Orphans)
}

func TestGoldenTranscriptView(t *testing.T) {
	st := newStore(t)
	res := fleet(t, st)
	d := &Dir{Path: filepath.Join(t.TempDir(), "views")}
	_, err := d.Project(t.Context(), st, res, Full)
	require.NoError(t, err)
	files := snapshot(t, d.Path)
	golden(t, "transcripts/beta.md", []byte(files["transcripts/beta.md"].data))
	golden(t, "transcripts/gamma.md", []byte(files["transcripts/gamma.md"].data))
}

func TestEmptyFleet(t *testing.T) {
	st := newStore(t)
	d := &Dir{Path: filepath.Join(t.TempDir(), "views")}
	written, err := d.Project(t.Context(), st, reconcile.Result{}, Full)
	require.NoError(t, err)
	require.Equal(t, []string{"STATUS.md", "fleet.json"}, written)
	b, err := os.ReadFile(filepath.Join(d.Path, "fleet.json"))
	require.NoError(t, err)
	require.JSONEq(t, `{"version":1,"spores":[],"orphans":[]}`, string(b))
}

func TestCanceled(t *testing.T) {
	st := newStore(t)
	res := fleet(t, st)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	d := &Dir{Path: filepath.Join(t.TempDir(), "views")}
	_, err := d.Project(ctx, st, res, Full)
	require.True(t, errors.Is(err, context.Canceled), "%v", err)
	require.NoFileExists(t, filepath.Join(d.Path, "fleet.json"))
}
