package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

const scheduleColony = `apiVersion: sporectl/v1
kind: Colony
metadata: {name: lab}
spec:
  schedules:
  - name: standup
    to: red-1
    cron: "0 9 * * mon-fri"
    timezone: Europe/Paris
    prompt: Say what you did yesterday.
  spores:
  - id: red-1
    swarm: red
    role: dev
`

// apply stores a colony's schedules claimed up to the apply, on both
// stores; diff says what a file adds, changes and removes; export writes
// them back and its apply writes nothing; status -o wide and json show
// the spore's next slot; a fault names its file, line and field.
func TestApplyDiffExportSchedules(t *testing.T) {
	eachStore(t, func(t *testing.T, r *applyRig) {
		file := r.file("lab.yaml", scheduleColony)
		d := r.run("", "diff", "-f", file)
		require.Equal(t, ExitDiffers, d.code, d.err)
		require.Contains(t, d.out, `schedules[standup]: none → to red-1 at "0 9 * * mon-fri" Europe/Paris: "Say what you did yesterday."`)

		require.Equal(t, "colony/lab configured\nspore/red-1 created\n", r.ok("", "apply", "-f", file))
		settings := statetest.Read(t, r.st, func(ctx context.Context, tx state.Tx) (state.Settings, error) { return tx.Settings(ctx) })
		require.Equal(t, []state.Schedule{{Name: "standup", To: "red-1", Cron: "0 9 * * mon-fri", Timezone: "Europe/Paris", Prompt: "Say what you did yesterday.", Done: testNow}},
			settings.Colony("lab").Schedules)

		before := r.writes()
		exported := r.ok("", "export", "lab")
		require.Contains(t, exported, "  schedules:\n  - cron: 0 9 * * mon-fri\n    name: standup\n    prompt: Say what you did yesterday.\n    timezone: Europe/Paris\n    to: red-1\n")
		d = r.run(exported, "diff", "-f", "-")
		require.Equal(t, ExitOK, d.code, "%s%s", d.out, d.err)
		r.ok(exported, "apply", "-f", "-")
		require.Equal(t, before, r.writes(), "the export applied writes nothing")

		// testNow is Sunday 1 November 2026, 12:00 UTC: the next slot is
		// Monday at 09:00 in Paris, 08:00 UTC.
		wide := r.run("", "status", "-o", "wide")
		require.Contains(t, wide.out, "NEXT")
		require.Contains(t, wide.out, "2026-11-02T08:00Z")
		js := r.run("", "status", "-o", "json")
		require.Contains(t, js.out, `"next_schedule": "2026-11-02T08:00:00Z"`)
		desc := r.run("", "describe", "red-1")
		require.Equal(t, ExitOK, desc.code, desc.err)
		require.Regexp(t, `Next schedule:\s+standup .*2026-11-02`, desc.out)
		desc = r.run("", "describe", "red-1", "-o", "json")
		require.Contains(t, desc.out, `"name": "standup"`)
		require.Contains(t, desc.out, `"at": "2026-11-02T08:00:00Z"`)

		removed := r.file("lab2.yaml", "apiVersion: sporectl/v1\nkind: Colony\nmetadata: {name: lab}\nspec:\n  schedules: []\n  spores: []\n")
		d = r.run("", "diff", "-f", removed)
		require.Equal(t, ExitDiffers, d.code, d.err)
		require.Contains(t, d.out, `schedules[standup]: to red-1 at "0 9 * * mon-fri" Europe/Paris: "Say what you did yesterday." → none`)

		bad := r.file("bad.yaml", strings.Replace(scheduleColony, "Europe/Paris", "Europe/Atlantis", 1))
		res := r.run("", "apply", "-f", bad)
		require.Equal(t, ExitUsage, res.code, res.err)
		require.Contains(t, res.err, "bad.yaml:9: spec.schedules[0].timezone: invalid value \"Europe/Atlantis\"")
	})
}
