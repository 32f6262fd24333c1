package colonyspec

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

const scheduled = `apiVersion: sporectl/v1
kind: Colony
metadata: {name: lab}
spec:
  schedules:
  - name: standup
    to: worker-1
    cron: "0 9 * * 1-5"
    timezone: Europe/Paris
    prompt: Say what you did yesterday.
  - name: review
    to: build/reviewer
    cron: "*/30 * * * *"
    prompt: Review the open pull requests.
  spores: []
`

func colonyOf(p Plan) *Change {
	for i, c := range p.Changes {
		if c.Settings != nil {
			return &p.Changes[i]
		}
	}
	return nil
}

// A file's schedules are stored by apply with their claim set to the
// time of the apply; exported back they read as the same file, and the
// export applied again changes nothing, claims kept.
func TestSchedulesApplyExportRoundTrip(t *testing.T) {
	ctx := context.Background()
	docs, err := Read("lab.yaml", []byte(scheduled))
	require.NoError(t, err)
	st := statetest.Dir(t, state.Settings{Runtime: "local"})
	now := time.Date(2026, 12, 7, 8, 59, 30, 0, time.UTC)
	apply := func(docs []Document, at time.Time) Plan {
		t.Helper()
		var p Plan
		require.NoError(t, st.Update(ctx, func(tx state.Tx) error {
			settings, err := tx.Settings(ctx)
			if err != nil {
				return err
			}
			if p, err = MakePlan(docs, nil, settings, Options{}); err != nil {
				return err
			}
			return Apply(ctx, tx, p, at)
		}))
		return p
	}
	p := apply(docs, now)
	c := colonyOf(p)
	require.NotNil(t, c)
	require.Contains(t, c.Diffs, Diff{"schedules[standup]", "none", `to worker-1 at "0 9 * * 1-5" Europe/Paris: "Say what you did yesterday."`})

	settings, err := readSettings(ctx, st)
	require.NoError(t, err)
	stored := settings.Colony("lab").Schedules
	require.Len(t, stored, 2)
	for _, s := range stored {
		require.Equal(t, now, s.Done, "%s claims every slot before its apply", s.Name)
	}
	require.Equal(t, state.Schedule{Name: "review", To: "build/reviewer", Cron: "*/30 * * * *", Prompt: "Review the open pull requests.", Done: now}, stored[1])

	e := Export("lab", nil, settings)
	out, err := yaml.Marshal(e)
	require.NoError(t, err)
	again, err := Read("export.yaml", out)
	require.NoError(t, err, "%s", out)
	require.Equal(t, *docs[0].Spec.Schedules, *again[0].Spec.Schedules)
	p = apply(again, now.Add(time.Hour))
	require.Nil(t, colonyOf(p), "the export applied changes nothing")

	// A changed cron is a new claim; a changed prompt keeps it.
	later := now.Add(2 * time.Hour)
	changed := strings.Replace(strings.Replace(scheduled, `"0 9 * * 1-5"`, `"0 10 * * 1-5"`, 1), "Review the open", "Review all", 1)
	docs, err = Read("lab.yaml", []byte(changed))
	require.NoError(t, err)
	c = colonyOf(apply(docs, later))
	require.NotNil(t, c)
	require.Contains(t, c.Diffs, Diff{"schedules[standup]", `to worker-1 at "0 9 * * 1-5" Europe/Paris: "Say what you did yesterday."`, `to worker-1 at "0 10 * * 1-5" Europe/Paris: "Say what you did yesterday."`})
	settings, err = readSettings(ctx, st)
	require.NoError(t, err)
	require.Equal(t, later, settings.Colony("lab").Schedules[0].Done, "re-timed: no slot before the change")
	require.Equal(t, now, settings.Colony("lab").Schedules[1].Done, "a new prompt keeps the claim")

	// Left out: kept. An empty list: removed, each said.
	docs, err = Read("lab.yaml", []byte("apiVersion: sporectl/v1\nkind: Colony\nmetadata: {name: lab}\nspec:\n  spores: []\n"))
	require.NoError(t, err)
	require.Nil(t, colonyOf(apply(docs, later)))
	docs, err = Read("lab.yaml", []byte("apiVersion: sporectl/v1\nkind: Colony\nmetadata: {name: lab}\nspec:\n  schedules: []\n  spores: []\n"))
	require.NoError(t, err)
	c = colonyOf(apply(docs, later))
	require.NotNil(t, c)
	require.Len(t, c.Diffs, 2)
	require.Equal(t, "none", c.Diffs[0].To)
	settings, err = readSettings(ctx, st)
	require.NoError(t, err)
	require.Empty(t, settings.Colony("lab").Schedules)
	require.Nil(t, Export("lab", nil, settings).Spec.Schedules)
}

// Each fault of a schedule is named by its file, line and field.
func TestScheduleFaultsNameTheirField(t *testing.T) {
	for _, tc := range []struct {
		name, field, value, want string
	}{
		{"a bad name", "name", "Stand Up", "spec.schedules[0].name"},
		{"no name", "name", `""`, "a schedule's name is required"},
		{"a bad target", "to", "worker_1", "want a spore id or SWARM/ROLE"},
		{"a bad role", "to", "build/Rev", "want a spore id or SWARM/ROLE"},
		{"three parts", "to", "a/b/c", "want a spore id or SWARM/ROLE"},
		{"four fields", "cron", `"0 9 * *"`, "want 5 fields"},
		{"a bad hour", "cron", `"0 25 * * *"`, `hour "25": want a number from 0 to 23`},
		{"a bad zone", "timezone", "Mars/Olympus", "IANA time zone"},
		{"Local is the machine's", "timezone", "Local", "IANA time zone"},
		{"a blank prompt", "prompt", `"  "`, "spec.schedules[0].prompt"},
		{"a control character", "prompt", `"a\u0007b"`, "spec.schedules[0].prompt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fields := map[string]string{"name": "standup", "to": "worker-1", "cron": `"0 9 * * *"`, "timezone": "UTC", "prompt": "hello"}
			fields[tc.field] = tc.value
			var b strings.Builder
			b.WriteString("apiVersion: sporectl/v1\nkind: Colony\nmetadata: {name: lab}\nspec:\n  schedules:\n")
			for i, k := range []string{"name", "to", "cron", "timezone", "prompt"} {
				if i == 0 {
					b.WriteString("  - ")
				} else {
					b.WriteString("    ")
				}
				b.WriteString(k + ": " + fields[k] + "\n")
			}
			_, err := Read("lab.yaml", []byte(b.String()))
			require.Error(t, err)
			require.ErrorContains(t, err, tc.want)
			line := map[string]string{"name": "6", "to": "7", "cron": "8", "timezone": "9", "prompt": "10"}[tc.field]
			require.ErrorContains(t, err, "lab.yaml:"+line+": spec.schedules[0]."+tc.field)
		})
	}

	dup := "apiVersion: sporectl/v1\nkind: Colony\nmetadata: {name: lab}\nspec:\n  schedules:\n  - {name: a, to: x, cron: '* * * * *', prompt: p}\n  - {name: a, to: y, cron: '* * * * *', prompt: q}\n"
	_, err := Read("lab.yaml", []byte(dup))
	require.ErrorContains(t, err, "lab.yaml:7: spec.schedules[1].name: schedule a is listed twice (first at lab.yaml:6: spec.schedules[0])")
	_, err = Read("lab.yaml", []byte("apiVersion: sporectl/v1\nkind: Colony\nmetadata: {name: lab}\nspec:\n  schedules:\n  - {name: a, to: x, cron: '* * * * *', prompt: p, every: 1m}\n"))
	require.ErrorContains(t, err, `unknown field "every"`)
}

func readSettings(ctx context.Context, st state.Store) (state.Settings, error) {
	var s state.Settings
	err := st.View(ctx, func(tx state.Tx) error {
		var err error
		s, err = tx.Settings(ctx)
		return err
	})
	return s, err
}
