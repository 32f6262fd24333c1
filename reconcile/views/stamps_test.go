package views

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

// countOpens counts the views projections open to read.
func countOpens(t *testing.T) *atomic.Int64 {
	t.Helper()
	var n atomic.Int64
	open := openView
	openView = func(p string) (*os.File, error) { n.Add(1); return open(p) }
	t.Cleanup(func() { openView = open })
	return &n
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return b
}

// A projection of a fleet at rest reads no view: the stamps say which
// file each is and what it was made from, and an lstat says it is still
// that file.
func TestAProjectionAtRestOpensNoView(t *testing.T) {
	st := newStore(t)
	res := fleet(t, st)
	d := &Dir{Path: filepath.Join(t.TempDir(), "views")}
	_, err := d.Project(t.Context(), st, res, Full)
	require.NoError(t, err)
	s, raw := readStamps(d.Path)
	require.NotNil(t, raw, "the stamps were written")
	require.NotEmpty(t, s.fleet.digest)
	require.Len(t, s.transcripts, 3)
	require.True(t, s.transcripts["beta"].s.covers(res.Spores[1].LastSeq, res.Spores[1].Created), "%+v", s.transcripts["beta"].s)

	opens := countOpens(t)
	for _, scope := range []Scope{Full, Partial} {
		written, err := d.Project(t.Context(), st, res, scope)
		require.NoError(t, err)
		require.Empty(t, written)
	}
	require.Zero(t, opens.Load(), "no view opened")
	require.Equal(t, raw, readFile(t, filepath.Join(d.Path, StampsFile)), "nor the stamps rewritten")
}

// Whatever happened to a view since the stamps were written, the
// projection notices it is another file and looks at it as it would
// without stamps.
func TestAViewChangedUnderTheStampsIsLookedAtAgain(t *testing.T) {
	later := time.Now().Add(time.Minute)
	for _, tc := range []struct {
		name    string
		change  func(t *testing.T, dir string)
		written []string
	}{
		{"fleet.json edited to the same size", func(t *testing.T, dir string) {
			sameSizeEdit(t, filepath.Join(dir, FleetFile), later)
		}, []string{FleetFile}},
		{"STATUS.md edited to the same size", func(t *testing.T, dir string) {
			sameSizeEdit(t, filepath.Join(dir, StatusFile), later)
		}, []string{StatusFile}},
		{"a transcript's stamp edited to the same size", func(t *testing.T, dir string) {
			sameSizeEdit(t, filepath.Join(dir, transcriptPath("beta")), later)
		}, []string{"transcripts/beta.md"}},
		{"a transcript removed", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, transcriptPath("alpha"))))
		}, []string{"transcripts/alpha.md"}},
		{"STATUS.md replaced by a copy of itself", func(t *testing.T, dir string) {
			p := filepath.Join(dir, StatusFile)
			b := readFile(t, p)
			require.NoError(t, os.WriteFile(p+".copy", b, filePerm))
			require.NoError(t, os.Rename(p+".copy", p))
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newStore(t)
			res := fleet(t, st)
			d := &Dir{Path: filepath.Join(t.TempDir(), "views")}
			_, err := d.Project(t.Context(), st, res, Full)
			require.NoError(t, err)
			want := snapshot(t, d.Path)

			tc.change(t, d.Path)
			written, err := d.Project(t.Context(), st, res, Full)
			require.NoError(t, err)
			require.Equal(t, tc.written, written)
			require.Equal(t, want, stripIDs(snapshot(t, d.Path), want), "the views are what they were")

			opens := countOpens(t)
			written, err = d.Project(t.Context(), st, res, Full)
			require.NoError(t, err)
			require.Empty(t, written)
			require.Zero(t, opens.Load(), "the stamps now name the file there")
		})
	}
}

// sameSizeEdit changes the first byte of the file at p in place, and
// sets its modification time to at (a clock tick can be coarser than a
// test is fast).
func sameSizeEdit(t *testing.T, p string, at time.Time) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteAt([]byte("~"), 0)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, os.Chtimes(p, at, at))
}

// A stamps file that is damaged, of another version, left over from an
// earlier projection (a crash between the renames and its write) or
// copied from another views directory is never believed against the
// files: the views come out as a projection without stamps makes them.
func TestStampsThatDoNotDescribeTheFilesAreNotBelieved(t *testing.T) {
	st := newStore(t)
	res := fleet(t, st)
	d := &Dir{Path: filepath.Join(t.TempDir(), "views")}
	_, err := d.Project(t.Context(), st, res, Full)
	require.NoError(t, err)
	stampsPath := filepath.Join(d.Path, StampsFile)
	early := readFile(t, stampsPath)

	// Elsewhere, the same spores rendered from the same log: other files.
	other := &Dir{Path: filepath.Join(t.TempDir(), "views")}
	_, err = other.Project(t.Context(), st, res, Full)
	require.NoError(t, err)
	foreign := readFile(t, filepath.Join(other.Path, StampsFile))

	// beta moves on; the views follow, and their stamps are written.
	res.Spores[1].LastSeq = appendEvents(t, st, "beta", false, state.Event{Kind: state.KindPrompt, At: t0.Add(time.Hour), From: "user:bob", Text: "again"})
	_, err = d.Project(t.Context(), st, res, Full)
	require.NoError(t, err)
	want := snapshot(t, d.Path)
	good := readFile(t, stampsPath)

	flipped := append([]byte(nil), good...)
	flipped[len(stampsHeader)+3] ^= 1
	for _, tc := range []struct {
		name  string
		bytes []byte
	}{
		{"empty", nil},
		{"truncated", good[:len(good)/2]},
		{"a byte flipped", flipped},
		{"another version", append([]byte("sporectl views stamps v9\n"), good[len(stampsHeader):]...)},
		{"from before the last projection", early},
		{"from another views directory", foreign},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(stampsPath, tc.bytes, filePerm))
			written, err := d.Project(t.Context(), st, res, Full)
			require.NoError(t, err)
			require.Empty(t, written, "the views were right")
			require.Equal(t, want, snapshot(t, d.Path))
			s, raw := readStamps(d.Path)
			require.NotNil(t, raw, "the stamps were written again")
			require.True(t, s.transcripts["beta"].s.covers(res.Spores[1].LastSeq, res.Spores[1].Created), "%+v", s.transcripts["beta"].s)
		})
	}
}

// Projections running at once, of an older and a newer result, leave
// stamps that the next projection can trust: it brings the views to
// exactly what the newer result alone makes.
func TestConcurrentProjectionsLeaveStampsTheNextCanTrust(t *testing.T) {
	st := newStore(t)
	older := fleet(t, st)
	newer := older
	newer.Spores = append([]reconcile.SporeHealth(nil), older.Spores...)
	newer.Spores[1].LastSeq = appendEvents(t, st, "beta", false, state.Event{Kind: state.KindPrompt, At: t0.Add(time.Hour), From: "user:bob", Text: "again"})
	newer.Spores[0].Effective = policy.Dead

	fresh := &Dir{Path: filepath.Join(t.TempDir(), "views")}
	_, err := fresh.Project(t.Context(), st, newer, Full)
	require.NoError(t, err)
	want := snapshot(t, fresh.Path)

	d := &Dir{Path: filepath.Join(t.TempDir(), "views")}
	for round := range 20 {
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() {
				res := older
				if (i+round)%2 == 0 {
					res = newer
				}
				_, err := d.Project(t.Context(), st, res, Full)
				require.NoError(t, err)
			})
		}
		wg.Wait()
		_, err := d.Project(t.Context(), st, newer, Full)
		require.NoError(t, err)
		require.Equal(t, want, stripIDs(snapshot(t, d.Path), want), "round %d", round)
	}
}

// The fleet's digest is of what fleetOf keeps: another spore, a change
// of one (any field: reconcile's TestHealthDigestHasEveryField), another
// orphan change it; the order the pass listed them in and a repeated
// orphan do not.
func TestFleetDigestIsOfWhatFleetOfKeeps(t *testing.T) {
	res := reconcile.Result{Spores: []reconcile.SporeHealth{{ID: "a"}, {ID: "b"}}, Orphans: []string{"x", "y"}}
	base := fleetDigest(res)
	same := reconcile.Result{Spores: []reconcile.SporeHealth{{ID: "b"}, {ID: "a"}}, Orphans: []string{"y", "x", "y"}}
	require.Equal(t, base, fleetDigest(same), "another order, a repeated orphan")
	require.Equal(t, fleetOf(res), fleetOf(same), "fleetOf keeps them alike")

	seen := map[string]bool{base: true}
	for name, changed := range map[string]reconcile.Result{
		"another spore":  {Spores: []reconcile.SporeHealth{{ID: "a"}, {ID: "b"}, {ID: "c"}}, Orphans: res.Orphans},
		"a spore's code": {Spores: []reconcile.SporeHealth{{ID: "a"}, {ID: "b", Code: "x"}}, Orphans: res.Orphans},
		"another orphan": {Spores: res.Spores, Orphans: []string{"x", "y", "z"}},
		"no orphans":     {Spores: res.Spores},
	} {
		d := fleetDigest(changed)
		require.False(t, seen[d], "%s: the digest did not change", name)
		seen[d] = true
	}
}

// fleet.json and STATUS.md rendered from goldenResult, for each
// fleetStampFormat: a change of the rendering must raise the format, or
// views an older sporectl wrote would be kept as they are.
var pinnedRendering = map[int]string{
	1: "50bf1bd59b34b1917a6abeb9d702d788",
}

func TestFleetStampFormatPinsTheRendering(t *testing.T) {
	f := fleetOf(goldenResult())
	fleet, err := fleetJSON(f)
	require.NoError(t, err)
	h := sha256.New()
	h.Write(fleet)
	h.Write(statusMarkdown(f))
	got := hex.EncodeToString(h.Sum(nil)[:16])
	require.Equal(t, pinnedRendering[fleetStampFormat], got,
		"fleet.json or STATUS.md renders differently: raise fleetStampFormat and pin %s for it", got)
}

// The stamps file reads back what was written, and anything else is
// either read whole or refused whole, never in part.
func FuzzParseStamps(f *testing.F) {
	s := stamps{
		fleet: fleetStamp{digest: "0123abcd", fleet: fileID{1, 2, 3}, status: fileID{4, 5, 6}},
		transcripts: map[string]transcriptStamp{
			"alpha": {s: stamp{format: 3, lastSeq: 9, created: "2026-05-01T09:00:00Z", last: "0123456789abcdef0123456789abcdef", open: true, body: 1234, crc: 0xdeadbeef}, id: fileID{7, 8, 9}},
			"b-2":   {s: stamp{format: 3, lastSeq: 0, created: "2026-05-01T09:00:00.5Z", last: "-", body: 22, crc: 7}, id: fileID{10, 11, 12}},
		},
	}
	good := s.marshal(0)
	back, ok := parseStamps(good)
	require.True(f, ok)
	require.Equal(f, s, back)
	f.Add(good)
	f.Add(good[:len(good)-3])
	f.Add([]byte(stampsHeader + stampsTrailer + "00000000\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := parseStamps(raw)
		if !ok {
			require.Zero(t, got, "nothing of a refused file is kept")
			return
		}
		again, ok := parseStamps(got.marshal(0))
		require.True(t, ok)
		require.Equal(t, got, again, "what is read is written back the same")
	})
}
