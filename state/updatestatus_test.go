package state_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// oneSpore is a transaction over one stored record that keeps the
// statuses written to it: UpdateStatus needs nothing else of a Tx.
type oneSpore struct {
	state.Tx
	sp     state.Spore
	writes []state.Status
}

func (o *oneSpore) Spore(_ context.Context, id string) (state.Spore, error) {
	if id != o.sp.ID {
		return state.Spore{}, state.SporeNotFound(id)
	}
	return o.sp, nil
}

func (o *oneSpore) PutStatus(_ context.Context, id string, st state.Status) error {
	if err := state.CheckStatus(id, o.sp.Generation, st); err != nil {
		return err
	}
	o.writes = append(o.writes, st)
	o.sp.Status = st
	return nil
}

func TestUpdateStatus(t *testing.T) {
	at := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	stored := func(observed uint64) state.Spore {
		return state.Spore{Wish: state.Wish{ID: "a", Generation: 3}, Status: state.Status{ObservedGeneration: observed, HealthRecord: state.HealthRecord{Restarts: 1}}}
	}
	refused := errors.New("refused")
	for _, c := range []struct {
		name   string
		stored state.Spore
		id     string
		change func(state.Spore, *state.Status) error
		err    error
		writes []state.Status // nil: none
	}{
		{name: "nothing changed: no write", stored: stored(3),
			change: func(state.Spore, *state.Status) error { return nil }},
		{name: "a field set to what it holds: no write", stored: stored(3),
			change: func(_ state.Spore, st *state.Status) error { st.Restarts = 1; return nil }},
		{name: "a time that differs below the stored precision: no write", stored: state.Spore{Wish: stored(3).Wish, Status: state.Status{ObservedGeneration: 3, IngestRecord: state.IngestRecord{ActiveAt: at}}},
			change: func(_ state.Spore, st *state.Status) error { st.ActiveAt = at.Add(time.Nanosecond); return nil }},
		{name: "a field changed: written at the wish", stored: stored(3),
			change: func(_ state.Spore, st *state.Status) error { st.Restarts = 2; return nil },
			writes: []state.Status{{ObservedGeneration: 3, HealthRecord: state.HealthRecord{Restarts: 2}}}},
		{name: "a wish written since: the status is written at it", stored: stored(2),
			change: func(state.Spore, *state.Status) error { return nil },
			writes: []state.Status{{ObservedGeneration: 3, HealthRecord: state.HealthRecord{Restarts: 1}}}},
		{name: "change sees the record as read", stored: stored(3),
			change: func(sp state.Spore, st *state.Status) error { st.Restarts = int(sp.Generation); return nil },
			writes: []state.Status{{ObservedGeneration: 3, HealthRecord: state.HealthRecord{Restarts: 3}}}},
		{name: "a list changed in place: written", stored: state.Spore{Wish: stored(3).Wish, Status: state.Status{ObservedGeneration: 3, SummonsRecord: state.SummonsRecord{Incidents: []state.Incident{{Key: "k", At: at}}}}},
			change: func(_ state.Spore, st *state.Status) error { st.Incidents[0].Key = "j"; return nil },
			writes: []state.Status{{ObservedGeneration: 3, SummonsRecord: state.SummonsRecord{Incidents: []state.Incident{{Key: "j", At: at}}}}}},
		{name: "change fails: nothing written", stored: stored(3),
			change: func(_ state.Spore, st *state.Status) error { st.Restarts = 9; return refused },
			err:    refused},
		{name: "no such spore", stored: stored(3), id: "ghost",
			change: func(state.Spore, *state.Status) error { t.Fatal("change ran for a missing spore"); return nil },
			err:    state.ErrNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			tx := &oneSpore{sp: c.stored}
			id := c.id
			if id == "" {
				id = c.stored.ID
			}
			got, err := state.UpdateStatus(context.Background(), tx, id, c.change)
			if c.err != nil {
				require.ErrorIs(t, err, c.err)
				require.Empty(t, tx.writes)
				return
			}
			require.NoError(t, err)
			if diff := cmp.Diff(c.writes, tx.writes); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tx.sp, got); diff != "" {
				t.Errorf("the record returned is not the one stored (-stored +returned):\n%s", diff)
			}
		})
	}
}
