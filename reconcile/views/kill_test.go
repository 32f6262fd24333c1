package views

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
	"github.com/sporectl/sporectl/state/statetest"
)

// The environment of the projection TestKilledAppendIsRenderedAgain
// kills: the store, the views, the last seq to project.
const (
	killStoreEnv = "SPORECTL_VIEWS_KILL_STORE"
	killViewsEnv = "SPORECTL_VIEWS_KILL_VIEWS"
	killSeqEnv   = "SPORECTL_VIEWS_KILL_SEQ"
)

// A projection SIGKILLed in the middle of an append (half its bytes
// written, the stamps file not yet) leaves a transcript the next
// projection finds torn and renders whole.
func TestKilledAppendIsRenderedAgain(t *testing.T) {
	root := t.TempDir()
	st := statetest.DirAt(t, filepath.Join(root, "store"), state.Settings{Runtime: "local"})
	res := fleet(t, st)
	d := &Dir{Path: filepath.Join(root, "views")}
	_, err := d.Project(t.Context(), st, res, Full)
	require.NoError(t, err)
	stamps := readFile(t, filepath.Join(d.Path, StampsFile))
	p := filepath.Join(d.Path, transcriptPath("beta"))
	before := readFile(t, p)

	res.Spores[1].LastSeq = appendEvents(t, st, "beta", false, lineEvent(1), lineEvent(2), lineEvent(3))
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestKilledAppendHelper$")
	cmd.Env = append(os.Environ(), killStoreEnv+"="+filepath.Join(root, "store"), killViewsEnv+"="+d.Path,
		killSeqEnv+"="+strconv.FormatUint(res.Spores[1].LastSeq, 10))
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	ready := filepath.Join(root, "appending")
	require.Eventually(t, func() bool { _, err := os.Stat(ready); return err == nil }, time.Minute, 10*time.Millisecond, "the helper appends")
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	require.Error(t, cmd.Wait())

	torn := readFile(t, p)
	require.NotEqual(t, before, torn, "half an append written")
	require.Equal(t, stamps, readFile(t, filepath.Join(d.Path, StampsFile)), "the stamps as the last projection left them")
	written, err := d.Project(t.Context(), st, res, Full)
	require.NoError(t, err)
	require.Contains(t, written, "transcripts/beta.md")
	require.Equal(t, fullRender(t, st, res)["transcripts/beta.md"].data, string(readFile(t, p)))
}

// TestKilledAppendHelper is the projection the test above kills: it
// writes half of beta's append, says so, and waits.
func TestKilledAppendHelper(t *testing.T) {
	storeDir := os.Getenv(killStoreEnv)
	if storeDir == "" {
		return // a helper process of TestKilledAppendIsRenderedAgain only
	}
	st, err := dirstore.Open(t.Context(), storeDir, dirstore.Options{})
	require.NoError(t, err)
	seq, err := strconv.ParseUint(os.Getenv(killSeqEnv), 10, 64)
	require.NoError(t, err)
	views := os.Getenv(killViewsEnv)
	appendFile = func(p string, at int64, b []byte, _ fileID) (fileID, error) {
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteAt(b[:len(b)/2], at)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(filepath.Dir(views), "appending"), nil, 0o600))
		time.Sleep(time.Hour) // killed here
		return fileID{}, nil
	}
	res := reconcile.Result{Spores: []reconcile.SporeHealth{health("beta", "lab", policy.Dead, seq)}}
	d := &Dir{Path: views}
	_, _ = d.Project(t.Context(), st, res, Partial)
	t.Fatal("the projection was to be killed mid-append")
}
