package dirstore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// TestUpgradeFormat7: a store written by the format-7 code, which knew no
// scheduled prompts, is refused until init (that code decodes the
// settings strictly, so it would call a store holding schedules corrupt;
// the number moving on makes it say "upgrade sporectl" instead), and init
// upgrades it in place: its spores, counts, outboxes, dead letter and
// colony settings stay, no colony has a schedule, and schedules then go
// in and read back through the next handle.
func TestUpgradeFormat7(t *testing.T) {
	ctx := t.Context()
	root := copyFixtureOf(t, 7)
	requireFormatRefused(t, root, 7)
	s, created, err := Init(ctx, root, state.Settings{}, Options{})
	require.NoError(t, err)
	require.False(t, created)
	want := fixtureDumpOf(t, 7)
	require.Equal(t, state.EgressNone, want.Settings.Colony("default").Egress)
	require.Empty(t, want.Settings.Colony("default").Schedules)
	requireUpgraded(t, s, want)

	done := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	sched := state.Schedule{Name: "standup", To: "alpha", Cron: "0 9 * * 1-5", Prompt: "hello", Done: done}
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		st, err := tx.Settings(ctx)
		if err != nil {
			return err
		}
		c := st.Colony("default")
		c.Schedules = []state.Schedule{sched}
		return tx.PutSettings(ctx, st.WithColony("default", c))
	}))
	o, err := Open(ctx, root, Options{})
	require.NoError(t, err)
	got := view(t, o, func(tx state.Tx) (state.Settings, error) { return tx.Settings(ctx) })
	require.Equal(t, []state.Schedule{sched}, got.Colony("default").Schedules)
	require.Equal(t, state.EgressNone, got.Colony("default").Egress, "the colony's other settings are kept")
	rep, err := o.Check(ctx)
	require.NoError(t, err)
	require.Empty(t, rep.Problems)
}
