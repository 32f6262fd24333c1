package dirstore

import (
	"context"
	"errors"
	"slices"

	"github.com/sporectl/sporectl/state"
)

// LockSpores does nothing: an Update holds the store's one writer lock
// from its start.
func (t *tx) LockSpores(ctx context.Context, ids []string) error { return ctx.Err() }

// LastEvents is Tail(1) of each id: a row from the snapshot (or the
// transaction's own), then the last line of its log, found from the end
// as Tail finds it. There is no round trip to save here, only the files
// to open, so a long list spreads them over the cores (inParallel).
func (t *tx) LastEvents(ctx context.Context, ids []string) (map[string]state.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	type last struct {
		ev  state.Event
		ok  bool
		err error
	}
	got := make([]last, len(ids))
	inParallel(len(ids), func(i int) {
		l := &got[i]
		l.ev, l.ok, l.err = t.lastEvent(ctx, ids[i])
	})
	out := make(map[string]state.Event, len(ids))
	var dmg state.DamagedError
	for i, l := range got {
		if damaged(&dmg, ids[i], l.err) {
			continue // its own damage: the others are read
		}
		if l.err != nil {
			return nil, l.err
		}
		if l.ok {
			out[ids[i]] = l.ev
		}
	}
	return out, dmg.OrNil()
}

// lastEvent is id's last event; ok is false when the spore does not exist
// (its log removed by a commit after this snapshot, too: readEvents says
// ErrNotFound then) or its log is empty. It reads only what the
// transaction never writes concurrently, so calls may run in parallel.
func (t *tx) lastEvent(ctx context.Context, id string) (ev state.Event, ok bool, err error) {
	r, found, err := t.get(id)
	if err != nil || !found || r.Log.LastSeq == 0 {
		return state.Event{}, false, err
	}
	if p := t.pending[id]; p != nil && len(p.events) > 0 {
		return p.events[len(p.events)-1], true, nil
	}
	evs, err := t.Tail(ctx, id, 1)
	if errors.Is(err, state.ErrNotFound) {
		return state.Event{}, false, nil
	}
	if err != nil || len(evs) == 0 {
		return state.Event{}, false, err
	}
	return evs[0], true, nil
}
