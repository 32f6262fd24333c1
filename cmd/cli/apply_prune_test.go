package cli

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

func TestApplyPrune(t *testing.T) {
	eachStore(t, func(t *testing.T, r *applyRig) {
		r.ok("", "apply", "-f", r.file("lab.yaml", labColony))
		r.ok("", "create", "ops-1", "--colony", "ops")
		r.ok("", "wake", "red-lead")
		only := r.file("only.yaml", colonyHead+"  - id: red-1\n")

		require.Equal(t, "spore/red-1 unchanged\n", r.ok("", "apply", "-f", only), "without --prune the others are left alone")
		d := r.run("", "diff", "-f", only, "--prune")
		require.Equal(t, ExitDiffers, d.code, d.err)
		require.Equal(t, "spore/lab-myco pruned (colony lab)\nspore/red-lead pruned (colony lab)\n", d.out)

		require.Equal(t, "spore/red-1 unchanged\nspore/lab-myco pruned\nspore/red-lead pruned\n", r.ok("", "apply", "-f", only, "--prune"))
		require.Equal(t, map[string]bool{"lab-myco": false, "red-lead": false}, r.rt.deleted, "their processes end, their homes are kept")
		require.Empty(t, r.rt.IDs(), "red-lead no longer runs")
		for _, id := range []string{"lab-myco", "red-lead"} {
			require.Equal(t, ExitNotFound, r.run("", "events", id).code, "%s is gone from the store", id)
		}
		require.Equal(t, state.RankSpore, statetest.Spore(t, r.st, "ops-1").Rank, "another colony's spore is left alone")
		require.Equal(t, "spore/red-1 unchanged\n", r.ok("", "apply", "-f", only, "--prune"), "pruned once")

		r.ok("", "create", "red-2", "--colony", "lab")
		require.Equal(t, "spore/red-1 unchanged\nspore/red-2 pruned\n", r.ok("", "apply", "-f", only, "--prune", "--purge-home", "--yes"))
		require.True(t, r.rt.deleted["red-2"], "--purge-home: the home goes too")

		// An empty list prunes the whole colony; a colony no file names is
		// never touched.
		empty := r.file("empty.yaml", strings.TrimSuffix(colonyHead, "\n")+" []\n")
		require.Equal(t, "spore/red-1 pruned\n", r.ok("", "apply", "-f", empty, "--prune"))
		require.Equal(t, ExitNotFound, r.run("", "export", "lab").code)
		require.Equal(t, "ops-1", statetest.Spore(t, r.st, "ops-1").ID)
	})
}

// TestExportRoundTrips: export prints a document that apply takes back
// unchanged (no transaction at all), and that makes the same wishes in
// an empty store.
func TestExportRoundTrips(t *testing.T) {
	eachStore(t, func(t *testing.T, r *applyRig) {
		r.ok("", "apply", "-f", r.file("lab.yaml", labColony))
		r.ok("", "create", "lab-2", "--colony", "lab", "--image", "ghcr.io/org/other:2", "--cpu", "500m", "--memory", "3Gi", "--storage", "9Gi")
		r.ok("", "create", "the-arch", "--colony", "lab", "--rank", "arch")
		r.ok("", "wake", "lab-2")
		r.ok("", "stop", "lab-myco")
		exported := r.ok("", "export", "lab")
		require.Contains(t, exported, "apiVersion: sporectl/v1\nkind: Colony\nmetadata:\n  name: lab\nspec:\n  spores:\n")
		require.Contains(t, exported, "  - desired: Running\n    id: lab-2\n    image: ghcr.io/org/other:2\n    rank: spore\n    resources:\n      cpu: 500m\n      memory: 3Gi\n      storage: 9Gi\n")

		before := r.writes()
		require.Equal(t, "spore/lab-2\nspore/lab-myco\nspore/red-1\nspore/red-lead\nspore/the-arch\n", r.ok(exported, "apply", "-f", "-", "--prune", "-o", "name"))
		require.Equal(t, before, r.writes(), "apply(export) writes no transaction")
		asJSON := r.ok("", "export", "lab", "-o", "json")
		require.Equal(t, 0, r.run(asJSON, "diff", "-f", "-", "--prune").code, "the JSON export is a document apply takes too")

		// Into an empty directory store: the same document comes out.
		other := filepath.Join(t.TempDir(), "other")
		statetest.DirAt(t, other, applySettings)
		o := applyRigOn(t, other, nil, r.rt)
		o.ok(exported, "apply", "-f", "-")
		require.Equal(t, exported, o.ok("", "export", "lab"))
		require.Equal(t, "colony/lab\n", r.ok("", "export", "lab", "-o", "name"))
		require.Equal(t, ExitNotFound, r.run("", "export", "nowhere").code)
		require.Equal(t, ExitUsage, r.run("", "export", "Bad").code)
	})
}

// TestApplyRuntimeFailureKeepsTheWish: the start after the commit fails
// (exit 9), the desired state stays recorded, and a reconcile starts it.
func TestApplyRuntimeFailureKeepsTheWish(t *testing.T) {
	eachStore(t, func(t *testing.T, r *applyRig) {
		r.rt.StartErr["red-1"] = errors.New("no node has room")
		woken := r.file("lab.yaml", strings.Replace(labColony, "role: dev", "role: dev\n    desired: Running", 1))
		res := r.run("", "apply", "-f", woken)
		require.Equal(t, ExitRuntime, res.code, res.err)
		require.Contains(t, res.out, "spore/red-1 created\n", "what was recorded is printed")
		require.Contains(t, res.err, "apply red-1 (desired Running is recorded; the next reconcile or wake retries): ")
		require.Contains(t, res.err, "no node has room")
		require.Equal(t, state.Running, statetest.Spore(t, r.st, "red-1").Desired)
		require.Empty(t, r.rt.IDs())

		delete(r.rt.StartErr, "red-1")
		res = r.run("", "reconcile")
		require.Contains(t, res.err, "red-1 restart")
		require.Equal(t, []string{"red-1"}, r.rt.IDs(), "the recorded wish is what reconcile starts")
	})
}
