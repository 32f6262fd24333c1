package state

import (
	"context"
	"fmt"
)

// ReasonStoreDamage is the health reason a pass records for a spore whose
// stored data it could not read (reconcile.ReasonStoreDamage is this
// spelling); a repair that leaves nothing damaged clears it.
const ReasonStoreDamage = "StoreDamage"

// Repairer is a store that can set a spore's damaged data aside, keeping
// everything intact (`sporectl repair`, docs/recovery.md). What is damaged
// is moved into a file of the store's own, never deleted; what is intact
// is kept as it was.
type Repairer interface {
	// Repair looks at spore id's stored data and sets aside what cannot
	// be read, in one transaction; dryRun says what it would do and
	// writes nothing. An id that does not exist is ErrNotFound.
	Repair(ctx context.Context, id string, dryRun bool) (*RepairReport, error)
}

// RepairReport is what a repair found and did (or would do).
type RepairReport struct {
	ID string `json:"id"`
	// Damage is what was found, each with its place; empty when nothing
	// of the spore is damaged.
	Damage []Problem `json:"damage"`
	// Kept is how many events were kept as they were; Replaced how many
	// damaged lines of the log became one marker event each, so the
	// numbering of the rest is unchanged.
	Kept     int `json:"kept"`
	Replaced int `json:"replaced"`
	// SetAside names the files (relative to the store) that hold what
	// was moved aside.
	SetAside []string `json:"set_aside,omitempty"`
	// Removed: the spore's record itself could not be read, so it was
	// set aside whole (with its log) and the spore is no longer in the
	// store; `sporectl create` makes it again on the same home.
	Removed bool `json:"removed,omitempty"`
	// Cleared: the damage mark a pass recorded was cleared.
	Cleared bool `json:"cleared,omitempty"`
	DryRun  bool `json:"dry_run,omitempty"`
}

// RepairIn is how a store runs a repair of spore id: in one transaction
// of st, a View when dryRun (nothing written) and an Update otherwise,
// with a report made anew on each run of fn (a store may run fn again).
// Its error says which spore was being repaired.
func RepairIn(ctx context.Context, st Store, id string, dryRun bool, fn func(tx Tx, rep *RepairReport) error) (*RepairReport, error) {
	if err := ValidateID(id); err != nil {
		return nil, err
	}
	run := st.Update
	if dryRun {
		run = st.View
	}
	var rep *RepairReport
	err := run(ctx, func(tx Tx) error {
		rep = &RepairReport{ID: id, Damage: []Problem{}, DryRun: dryRun}
		return fn(tx, rep)
	})
	if err != nil {
		return nil, fmt.Errorf("repair spore %s: %w", id, err)
	}
	return rep, nil
}
