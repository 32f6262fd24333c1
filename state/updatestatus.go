package state

import (
	"context"
	"fmt"
)

// UpdateStatus is the one writer of a spore's status (updatestatus_test.go's
// lint keeps it so: nothing else calls Tx.PutStatus but the backends and
// their contract suite). It reads spore id in tx, hands change the record
// as read and its status as it would be written against that record's
// wish (StatusAtWish) to change in place, and writes it unless it equals
// the stored one (Status.Equal): a status nobody changed costs no write,
// and every write is made at the generation the transaction reads, so
// the store's rule (CheckStatus) holds by construction.
//
// It returns the record as it stands afterwards: the wish as read and the
// status as written, or as stored when nothing was. An error from change
// is returned as it is and nothing is written; a spore that does not
// exist is ErrNotFound (wrapped), as from Tx.Spore.
//
// A caller that must write nothing when it has nothing to say (the
// status at the wish differs from the stored one whenever a wish was
// written since the last status) decides that before it calls.
func UpdateStatus(ctx context.Context, tx Tx, id string, change func(sp Spore, st *Status) error) (Spore, error) {
	sp, err := tx.Spore(ctx, id)
	if err != nil {
		return sp, err
	}
	st := sp.StatusAtWish().clone()
	if err := change(sp, &st); err != nil {
		return sp, err
	}
	if st.Equal(sp.Status) {
		return sp, nil
	}
	if err := tx.PutStatus(ctx, id, st); err != nil {
		return sp, fmt.Errorf("write the status of %s: %w", id, err)
	}
	sp.Status = st
	return sp, nil
}
