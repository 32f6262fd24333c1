package storetest

import (
	"context"
	"errors"

	"github.com/sporectl/sporectl/state"
)

// Dump is everything a caller can see of a store through the interface.
type Dump struct {
	Settings state.Settings
	Spores   []state.Spore
	Heads    map[string]state.SporeHead
	Events   map[string][]state.Event
	Outbox   map[string][]state.OutboxEntry
	// Dead holds the spores' dead letters, only those of spores that
	// have any (nil when none has).
	Dead   map[string][]state.OutboxEntry `json:",omitempty"`
	Tokens map[string]state.TokenHash
}

// ReadAll reads a Dump of s in one View, so its parts agree.
func ReadAll(ctx context.Context, s state.Store) (*Dump, error) {
	d := &Dump{Events: map[string][]state.Event{}, Outbox: map[string][]state.OutboxEntry{}, Tokens: map[string]state.TokenHash{}}
	err := s.View(ctx, func(tx state.Tx) error {
		var err error
		if d.Settings, err = tx.Settings(ctx); err != nil {
			return err
		}
		if d.Spores, err = tx.Spores(ctx); err != nil {
			return err
		}
		if d.Heads, err = tx.Heads(ctx); err != nil {
			return err
		}
		for _, sp := range d.Spores {
			if d.Events[sp.ID], err = tx.Events(ctx, sp.ID, 0, 0); err != nil {
				return err
			}
			if d.Outbox[sp.ID], err = tx.Outbox(ctx, sp.ID); err != nil {
				return err
			}
			dead, err := tx.DeadLetters(ctx, sp.ID)
			if err != nil {
				return err
			}
			if len(dead) > 0 {
				if d.Dead == nil {
					d.Dead = map[string][]state.OutboxEntry{}
				}
				d.Dead[sp.ID] = dead
			}
			h, err := tx.TokenHash(ctx, sp.ID)
			switch {
			case err == nil:
				d.Tokens[sp.ID] = h
			case !errors.Is(err, state.ErrNotFound):
				return err
			}
		}
		return nil
	})
	return d, err
}
