package pgstore

import (
	"context"
)

// Revision is the View's snapshot (pg_current_snapshot: the next
// transaction id and those in progress), after the server's start time.
// Two snapshots with the same next id and the same transactions in
// progress see the same committed rows: no transaction took an id, and
// none ended, between them. Transaction ids are 64 bits and never
// repeat within a cluster; the start time keeps a cluster made again
// (or restored from a backup) from repeating a revision. Writes to
// other databases of the cluster change it too, needlessly.
func (t *tx) Revision(ctx context.Context) (string, error) {
	if !t.readOnly {
		return "", nil
	}
	var rev string
	err := t.tx.QueryRow(ctx, `SELECT pg_current_snapshot()::text || '@' || extract(epoch FROM pg_postmaster_start_time())::text`).Scan(&rev)
	if err != nil {
		return "", classify("read the revision", err)
	}
	return rev, nil
}
