package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// testSchedules: a colony's schedules round-trip in the settings with
// their claims (Done, at the store's precision), and a bad one is refused
// naming its field, nothing written.
func testSchedules(t *testing.T, s state.Store) {
	ctx := t.Context()
	lab := state.ColonySettings{Schedules: []state.Schedule{
		{Name: "standup", To: "worker-1", Cron: "0 9 * * 1-5", Timezone: "Europe/Paris", Prompt: "Say what you did.", Done: state.Stamp(t0)},
		{Name: "review", To: "build/reviewer", Cron: "*/30 * * * *", Prompt: "Review.", Done: state.Stamp(t0.Add(time.Minute))},
	}}
	put := func(st state.Settings) error {
		return s.Update(ctx, func(tx state.Tx) error { return tx.PutSettings(ctx, st) })
	}
	get := func() state.Settings {
		return view(t, s, func(ctx context.Context, tx state.Tx) (state.Settings, error) { return tx.Settings(ctx) })
	}
	base := get()
	require.NoError(t, put(base.WithColony("lab", lab)))
	require.Equal(t, lab, get().Colony("lab"))
	require.True(t, get().Colony("lab").Equal(lab))

	for name, bad := range map[string]struct {
		s     state.Schedule
		field string
	}{
		"bad name":    {state.Schedule{Name: "Stand Up", To: "x", Cron: "* * * * *", Prompt: "p"}, "colonies.lab.schedules[0].name"},
		"bad target":  {state.Schedule{Name: "a", To: "a/b/c", Cron: "* * * * *", Prompt: "p"}, "colonies.lab.schedules[0].to"},
		"bad cron":    {state.Schedule{Name: "a", To: "x", Cron: "* * *", Prompt: "p"}, "colonies.lab.schedules[0].cron"},
		"bad zone":    {state.Schedule{Name: "a", To: "x", Cron: "* * * * *", Timezone: "Nowhere/Else", Prompt: "p"}, "colonies.lab.schedules[0].timezone"},
		"no prompt":   {state.Schedule{Name: "a", To: "x", Cron: "* * * * *"}, "colonies.lab.schedules[0].prompt"},
		"long prompt": {state.Schedule{Name: "a", To: "x", Cron: "* * * * *", Prompt: string(make([]byte, state.MaxSchedulePromptBytes+1))}, "colonies.lab.schedules[0].prompt"},
	} {
		err := put(get().WithColony("lab", state.ColonySettings{Schedules: []state.Schedule{bad.s}}))
		var inv *state.InvalidError
		require.ErrorAs(t, err, &inv, name)
		require.Equal(t, bad.field, inv.Field, name)
		require.Equal(t, lab, get().Colony("lab"), "%s: nothing written", name)
	}
	twice := state.ColonySettings{Schedules: []state.Schedule{lab.Schedules[0], lab.Schedules[0]}}
	require.ErrorContains(t, put(get().WithColony("lab", twice)), "another schedule's name")
	require.NoError(t, put(get().WithColony("lab", state.ColonySettings{})))
	require.Empty(t, get().Colony("lab").Schedules)
}

// testScheduleClaim: writers that each claim a slot by moving a
// schedule's Done in the settings and appending the slot's event in the
// same transaction, at once and many times over, append each slot's
// event exactly once: a store serializes a read and write of the
// settings (the pass's claim of a scheduled prompt, reconcile/schedule.go).
func testScheduleClaim(t *testing.T, s state.Store) {
	ctx := t.Context()
	create(t, s, "one")
	sched := state.Schedule{Name: "tick", To: "one", Cron: "* * * * *", Prompt: "tick", Done: state.Stamp(t0)}
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		st, err := tx.Settings(ctx)
		if err != nil {
			return err
		}
		return tx.PutSettings(ctx, st.WithColony("default", state.ColonySettings{Schedules: []state.Schedule{sched}}))
	}))
	const writers, slots = 4, 12
	var wg sync.WaitGroup
	errs := make(chan error, writers*slots)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 1; i <= slots; i++ {
				slot := t0.Add(time.Duration(i) * time.Minute)
				err := s.Update(ctx, func(tx state.Tx) error {
					st, err := tx.Settings(ctx)
					if err != nil {
						return err
					}
					c := st.Colony("default")
					if !slot.After(c.Schedules[0].Done) {
						return nil // claimed by another writer
					}
					c.Schedules = []state.Schedule{c.Schedules[0]}
					c.Schedules[0].Done = slot
					if err := tx.PutSettings(ctx, st.WithColony("default", c)); err != nil {
						return err
					}
					_, err = tx.Append(ctx, "one", []state.Event{{Kind: state.KindMessage, Action: sched.SlotID(slot), From: fmt.Sprintf("w%d", w), At: slot, Text: "tick"}})
					return err
				})
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	evs := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Event, error) { return tx.Events(ctx, "one", 0, 0) })
	count := map[string]int{}
	for _, e := range evs {
		if e.Action != "" {
			count[e.Action]++
		}
	}
	require.Len(t, count, slots, "every slot claimed")
	for id, n := range count {
		require.Equal(t, 1, n, "slot %s claimed once", id)
	}
}
