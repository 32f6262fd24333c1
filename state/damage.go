package state

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// DamagedError is a read of many spores (Spores, Heads, Pending) that
// found some spores' stored data unreadable. The read still returned
// every intact spore: one spore's damage is its own, so a caller that
// judges spores one at a time (the pass) carries on with the others and
// shows each damaged one as such, while a caller that needs the whole
// fleet fails as before. Each damaged spore is named with the
// *CorruptError that says where its damage is.
type DamagedError struct {
	Spores map[string]*CorruptError
}

func (e *DamagedError) Error() string {
	ids := e.IDs()
	var b strings.Builder
	fmt.Fprintf(&b, "%d spore(s) with damaged stored data", len(ids))
	for i, id := range ids {
		if i == 3 {
			fmt.Fprintf(&b, "; and %d more", len(ids)-i)
			break
		}
		fmt.Fprintf(&b, "; %s: %s: %s", id, e.Spores[id].Where(), e.Spores[id].Reason)
	}
	return b.String()
}

// Unwrap gives the first damage (by id), so errors.As finds a
// *CorruptError and a caller that knows nothing of DamagedError maps it
// to the corrupt store's exit code as before.
func (e *DamagedError) Unwrap() error {
	ids := e.IDs()
	if len(ids) == 0 {
		return nil
	}
	return e.Spores[ids[0]]
}

// IDs are the damaged spores' ids, sorted.
func (e *DamagedError) IDs() []string {
	ids := make([]string, 0, len(e.Spores))
	for id := range e.Spores {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Add records spore id's damage.
func (e *DamagedError) Add(id string, c *CorruptError) {
	if e.Spores == nil {
		e.Spores = map[string]*CorruptError{}
	}
	e.Spores[id] = c
}

// OrNil is e as an error: nil when it names no spore.
func (e *DamagedError) OrNil() error {
	if e == nil || len(e.Spores) == 0 {
		return nil
	}
	return e
}

// Damaged splits err from a read of many spores: the damaged spores it
// names (nil when none) and any other error, which is the read's failure
// as a whole.
func Damaged(err error) (map[string]*CorruptError, error) {
	var d *DamagedError
	if errors.As(err, &d) {
		return d.Spores, nil
	}
	return nil, err
}

// SporeDamage says whether err, from a read of one spore's data, is that
// spore's stored data being unreadable; it returns the damage then.
func SporeDamage(err error) (*CorruptError, bool) {
	var c *CorruptError
	if errors.As(err, &c) {
		return c, true
	}
	return nil, false
}
