package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

var applySettings = state.Settings{Runtime: "local", Image: "img:1", DefaultSpec: state.Spec{CPU: "1", Memory: "1Gi", Storage: "2Gi"}}

// applyRig is a fakeColony on one store (directory or PostgreSQL) made
// by the test, not by init, counting the write transactions every
// command makes.
type applyRig struct {
	*fakeColony
	st    state.Store // the test's own handle, checked when it ends
	dir   string      // for the test's files
	rt    *deleteRecorder
	mu    sync.Mutex
	opens []*statetest.Counting
}

// deleteRecorder is the fake runtime, remembering each Delete's purge.
type deleteRecorder struct {
	*reconciletest.Runtime
	mu      sync.Mutex
	deleted map[string]bool // id → purgeHome
}

func (d *deleteRecorder) Delete(ctx context.Context, id string, purgeHome bool) error {
	d.mu.Lock()
	d.deleted[id] = purgeHome
	d.mu.Unlock()
	return d.Runtime.Delete(ctx, id, purgeHome)
}

// eachStore runs fn on a fresh directory store and a fresh PostgreSQL
// database (skipped without a server, failing when CI is set).
func eachStore(t *testing.T, fn func(t *testing.T, r *applyRig)) {
	t.Run("dir", func(t *testing.T) {
		loc := filepath.Join(t.TempDir(), "store")
		fn(t, newApplyRig(t, loc, statetest.DirAt(t, loc, applySettings)))
	})
	t.Run("pg", func(t *testing.T) {
		st, url := statetest.Postgres(t, applySettings)
		fn(t, newApplyRig(t, url, st))
	})
}

func newApplyRig(t *testing.T, loc string, st state.Store) *applyRig {
	return applyRigOn(t, loc, st, &deleteRecorder{Runtime: reconciletest.New(), deleted: map[string]bool{}})
}

// applyRigOn is a rig on the store at loc whose commands get rec.
func applyRigOn(t *testing.T, loc string, st state.Store, rec *deleteRecorder) *applyRig {
	r := &applyRig{st: st, dir: t.TempDir(), rt: rec}
	r.fakeColony = &fakeColony{t: t, store: loc, rt: rec.Runtime, now: testNow, runtime: rec,
		getenv: func(string) string { return "" },
		wrap: func(st state.Store) state.Store {
			c := &statetest.Counting{Store: st}
			r.mu.Lock()
			r.opens = append(r.opens, c)
			r.mu.Unlock()
			return c
		}}
	return r
}

func (r *applyRig) ok(stdin string, args ...string) string {
	r.t.Helper()
	res := r.run(stdin, args...)
	require.Equal(r.t, 0, res.code, "sporectl %s: %s", strings.Join(args, " "), res.err)
	return res.out
}

// writes is how many write transactions the commands made so far.
func (r *applyRig) writes() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int64
	for _, c := range r.opens {
		n += c.Updates.Load()
	}
	return n
}

// file writes name in the rig's directory and returns its path.
func (r *applyRig) file(name, content string) string {
	r.t.Helper()
	p := filepath.Join(r.dir, name)
	require.NoError(r.t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(r.t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

const labColony = `apiVersion: sporectl/v1
kind: Colony
metadata:
  name: lab
spec:
  defaults:
    image: ghcr.io/org/spore:1
    resources:
      memory: 2Gi
  spores:
  - id: lab-myco
    rank: colony
  - id: red-lead
    rank: swarm
    swarm: red
    loop: 30m
  - id: red-1
    swarm: red
    role: dev
    resources:
      cpu: 2
`

func TestApplyCreatesChangesAndIsIdempotent(t *testing.T) {
	eachStore(t, func(t *testing.T, r *applyRig) {
		lab := r.file("lab.yaml", labColony)

		d := r.run("", "diff", "-f", lab)
		require.Equal(t, ExitDiffers, d.code, d.err)
		require.Empty(t, d.err, "diff's answer is its output and its code")
		require.Contains(t, d.out, "spore/red-1 created (colony lab)\n  + rank: spore\n  + swarm: red\n  + role: dev\n")
		require.Zero(t, r.writes(), "diff writes nothing")

		require.Equal(t, "spore/lab-myco created\nspore/red-lead created\nspore/red-1 created\n", r.ok("", "apply", "-f", lab))
		require.EqualValues(t, 1, r.writes(), "every change of the file in one transaction")
		sp := statetest.Spore(t, r.st, "red-1")
		require.Equal(t, state.Wish{ID: "red-1", Colony: "lab", Rank: state.RankSpore, Swarm: "red", Role: "dev", Desired: state.Paused,
			Spec:    state.Spec{Image: "ghcr.io/org/spore:1", CPU: "2", Memory: "2Gi", Storage: "2Gi"},
			Created: testNow, Updated: testNow}, sp.Wish, "the spore's own fields, then spec.defaults, then the store's")
		lead := statetest.Spore(t, r.st, "red-lead")
		require.Equal(t, state.Duration(30*time.Minute), lead.Loop)
		require.Equal(t, testNow.Add(30*time.Minute), lead.LoopDue)

		require.Equal(t, "spore/lab-myco unchanged\nspore/red-lead unchanged\nspore/red-1 unchanged\n", r.ok("", "apply", "-f", lab))
		require.EqualValues(t, 1, r.writes(), "a second apply writes nothing")
		d = r.run("", "diff", "-f", lab)
		require.Equal(t, ExitOK, d.code, d.err)
		require.Empty(t, d.out)

		changed := strings.Replace(strings.Replace(labColony, "cpu: 2", "cpu: 3\n    desired: Running", 1), "rank: colony", "rank: colony\n    desired: Stopped", 1)
		lab = r.file("lab.yaml", changed)
		d = r.run("", "diff", "-f", lab, "-o", "json")
		require.Equal(t, ExitDiffers, d.code, d.err)
		require.JSONEq(t, `{"changes": [
			{"kind": "spore", "id": "lab-myco", "colony": "lab", "action": "configured", "diffs": [{"field": "desired", "from": "Paused", "to": "Stopped"}]},
			{"kind": "spore", "id": "red-1", "colony": "lab", "action": "configured", "diffs": [{"field": "resources.cpu", "from": "2", "to": "3"}, {"field": "desired", "from": "Paused", "to": "Running"}]}]}`, d.out)
		require.Equal(t, "spore/lab-myco\nspore/red-lead\nspore/red-1\n", r.ok("", "apply", "-f", lab, "-o", "name"),
			"-o name: the spores, unchanged ones included")
		require.Equal(t, []string{"red-1"}, r.rt.IDs(), "desired Running is started, as wake starts it")
		require.Equal(t, state.Stopped, statetest.Spore(t, r.st, "lab-myco").Desired)
		var texts []string
		for _, e := range statetest.Events(t, r.st, "red-1") {
			if e.Kind == state.KindLifecycle {
				texts = append(texts, e.Action+": "+e.Text)
			}
		}
		require.Equal(t, []string{"created: colony lab, rank spore, desired Paused", "configured: cpu 2 → 3", "wake: desired Paused → Running"}, texts[:3])

		before := r.writes()
		r.ok("", "apply", "-f", lab)
		require.Equal(t, before, r.writes(), "applied again: nothing written, the running spore left alone")
	})
}
