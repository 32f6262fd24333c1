package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sporectl/sporectl/state"
)

const sporeColumns = `id, colony, rank, swarm, role, desired, spec_image, spec_cpu, spec_memory, spec_storage,
	created, updated, restarts, failures, not_before, breaker_open, bridge_seq,
	generation, health, health_reason, loop_interval_ms, loop_due, activity, incidents,
	` + sleepColumns

// sleepColumns are idle sleep's (migration 0006), last in every column
// list, scan and argument list.
const sleepColumns = `sleep_after_ms, desired_by, active_at`

func scanSpore(row pgx.Row) (state.Spore, error) {
	var (
		sp            state.Spore
		rank, desired string
		failures      *[]time.Time // nil for NULL, so nil and empty stay apart
		notBefore     *time.Time
		bridgeSeq     int64
		generation    int64
		loopMS        int64
		loopDue       *time.Time
		activity      []byte // json; NULL: none
		incidents     []byte
		sleepMS       int64
		desiredBy     string
		activeAt      *time.Time
	)
	err := row.Scan(&sp.ID, &sp.Colony, &rank, &sp.Swarm, &sp.Role, &desired,
		&sp.Spec.Image, &sp.Spec.CPU, &sp.Spec.Memory, &sp.Spec.Storage,
		&sp.Created, &sp.Updated, &sp.Restarts, &failures, &notBefore, &sp.BreakerOpen, &bridgeSeq,
		&generation, &sp.Health, &sp.HealthReason, &loopMS, &loopDue, &activity, &incidents,
		&sleepMS, &desiredBy, &activeAt)
	if err != nil {
		return sp, err
	}
	sp.Rank, sp.Desired = state.Rank(rank), state.Desired(desired)
	sp.Created, sp.Updated = sp.Created.UTC(), sp.Updated.UTC()
	if failures != nil {
		sp.Failures = make([]time.Time, len(*failures))
		for i, f := range *failures {
			sp.Failures[i] = f.UTC()
		}
	}
	if notBefore != nil {
		sp.NotBefore = notBefore.UTC()
	}
	if bridgeSeq < 0 {
		return sp, corrupt("sporectl.spores", "id="+sp.ID, "negative bridge_seq")
	}
	sp.BridgeSeq = uint64(bridgeSeq)
	if generation < 0 {
		return sp, corrupt("sporectl.spores", "id="+sp.ID, "negative generation")
	}
	sp.Generation = uint64(generation)
	sp.Loop = state.Duration(time.Duration(loopMS) * time.Millisecond)
	if loopDue != nil {
		sp.LoopDue = loopDue.UTC()
	}
	sp.SleepAfter, sp.DesiredBy = state.Duration(time.Duration(sleepMS)*time.Millisecond), state.DesiredBy(desiredBy)
	if activeAt != nil {
		sp.ActiveAt = activeAt.UTC()
	}
	if activity != nil {
		var err error
		if sp.Activity, err = decodeActivity(activity); err != nil {
			return sp, corrupt("sporectl.spores", "id="+sp.ID, "activity: "+err.Error())
		}
	}
	if incidents != nil {
		if err := json.Unmarshal(incidents, &sp.Incidents); err != nil {
			return sp, corrupt("sporectl.spores", "id="+sp.ID, "incidents: "+err.Error())
		}
	}
	if err := sp.Validate(); err != nil {
		return sp, corrupt("sporectl.spores", "id="+sp.ID, err.Error())
	}
	return sp, nil
}

func (t *tx) Spore(ctx context.Context, id string) (state.Spore, error) {
	if err := t.orderRow(ctx, "read spore "+id, id); err != nil {
		return state.Spore{}, err
	}
	sp, err := scanSpore(t.tx.QueryRow(ctx, `SELECT `+sporeColumns+` FROM sporectl.spores WHERE id = $1`+t.lockClause(), id))
	if errors.Is(err, pgx.ErrNoRows) {
		return sp, state.SporeNotFound(id)
	}
	if err != nil {
		return sp, sporeErr("read spore "+id, err)
	}
	return sp, nil
}

func (t *tx) Spores(ctx context.Context) ([]state.Spore, error) {
	if err := t.lockSporeSet(ctx); err != nil {
		return nil, err
	}
	// id is COLLATE "C", so this order is bytewise whatever the
	// database's locale, and it is the primary key's index order.
	lock := t.lockClause()
	if lock != "" {
		lock += t.rowsNowait()
	}
	all := func(w *lockSet) { w.all = true }
	rows, err := t.tx.Query(ctx, `SELECT `+sporeColumns+` FROM sporectl.spores ORDER BY id`+lock)
	if err != nil {
		return nil, t.refuseRows("list spores", err, all)
	}
	defer rows.Close()
	var out []state.Spore
	for rows.Next() {
		sp, err := scanSpore(rows)
		if err != nil {
			return nil, sporeErr("list spores", err)
		}
		out = append(out, sp)
	}
	if err := rows.Err(); err != nil {
		return nil, t.refuseRows("list spores", err, all)
	}
	t.tookAll(lock, len(out), func(i int) string { return out[i].ID })
	return out, nil
}

// sporeErr keeps typed errors (CorruptError from a row) and classifies the
// rest.
func sporeErr(op string, err error) error {
	var ce *state.CorruptError
	if errors.As(err, &ce) {
		return err
	}
	return classify(op, err)
}

// sporeArgs are the values for sporeColumns, in order.
func sporeArgs(sp *state.Spore) []any {
	var failures any
	if sp.Failures != nil {
		failures = sp.Failures
	}
	var notBefore any
	if !sp.NotBefore.IsZero() {
		notBefore = sp.NotBefore
	}
	var loopDue any
	if !sp.LoopDue.IsZero() {
		loopDue = sp.LoopDue
	}
	var activeAt any
	if !sp.ActiveAt.IsZero() {
		activeAt = sp.ActiveAt
	}
	return []any{sp.ID, sp.Colony, string(sp.Rank), sp.Swarm, sp.Role, string(sp.Desired),
		sp.Spec.Image, sp.Spec.CPU, sp.Spec.Memory, sp.Spec.Storage,
		sp.Created, sp.Updated, sp.Restarts, failures, notBefore, sp.BreakerOpen, int64(sp.BridgeSeq),
		int64(sp.Generation), sp.Health, sp.HealthReason, time.Duration(sp.Loop).Milliseconds(), loopDue,
		encodeActivity(sp.Activity), jsonOrNull(sp.Incidents),
		time.Duration(sp.SleepAfter).Milliseconds(), string(sp.DesiredBy), activeAt}
}

// jsonOrNull is v as a json column: NULL when empty. Marshalling a
// validated slice of plain structs cannot fail.
func jsonOrNull[T any](v []T) any {
	if len(v) == 0 {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("pgstore: marshal %T: %v", v, err))
	}
	return string(b)
}

func (t *tx) CreateSpore(ctx context.Context, sp state.Spore) error {
	if err := t.writable("create spore"); err != nil {
		return err
	}
	if err := checkSpore(&sp); err != nil {
		return err
	}
	if err := t.lockSporeSet(ctx); err != nil {
		return err
	}
	// ON CONFLICT DO NOTHING instead of catching a unique violation: an
	// error would abort the whole transaction, but ErrExists must leave it
	// usable like every other typed error.
	tag, err := t.tx.Exec(ctx, `INSERT INTO sporectl.spores (`+sporeColumns+`)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24,
		$25, $26, $27)
		ON CONFLICT (id) DO NOTHING`, sporeArgs(&sp)...)
	if err != nil {
		return classify("create spore "+sp.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("create spore %q: %w", sp.ID, state.ErrExists)
	}
	return nil
}

func (t *tx) UpdateSpore(ctx context.Context, sp state.Spore) error {
	if err := t.writable("update spore"); err != nil {
		return err
	}
	if err := checkSpore(&sp); err != nil {
		return err
	}
	if err := t.orderRow(ctx, "update spore "+sp.ID, sp.ID); err != nil {
		return err
	}
	tag, err := t.tx.Exec(ctx, `UPDATE sporectl.spores SET colony = $2, rank = $3, swarm = $4, role = $5, desired = $6,
		spec_image = $7, spec_cpu = $8, spec_memory = $9, spec_storage = $10, created = $11, updated = $12,
		restarts = $13, failures = $14, not_before = $15, breaker_open = $16, bridge_seq = $17,
		generation = $18, health = $19, health_reason = $20,
		loop_interval_ms = $21, loop_due = $22, activity = $23, incidents = $24,
		sleep_after_ms = $25, desired_by = $26, active_at = $27
		WHERE id = $1`, sporeArgs(&sp)...)
	if err != nil {
		return classify("update spore "+sp.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return state.SporeNotFound(sp.ID)
	}
	return nil
}

func (t *tx) PutWish(ctx context.Context, w state.Wish) error {
	cur, err := t.Spore(ctx, w.ID)
	if err != nil {
		return err
	}
	sp := state.Spore{Wish: w, Status: cur.Status}
	if err := checkSpore(&sp); err != nil {
		return err
	}
	if err := state.CheckWish(cur.Wish, w); err != nil {
		return err
	}
	return t.UpdateSpore(ctx, sp)
}

func (t *tx) PutStatus(ctx context.Context, id string, st state.Status) error {
	cur, err := t.Spore(ctx, id)
	if err != nil {
		return err
	}
	if err := state.CheckStatus(id, cur.Generation, st); err != nil {
		return err
	}
	return t.UpdateSpore(ctx, state.Spore{Wish: cur.Wish, Status: st})
}

func (t *tx) DeleteSpore(ctx context.Context, id string) error {
	if err := t.writable("delete spore"); err != nil {
		return err
	}
	op := "delete spore " + id
	if err := t.lockSporeSet(ctx); err != nil {
		return err
	}
	if err := t.orderRow(ctx, op, id); err != nil {
		return err
	}
	// Deleting the row first takes its lock, so no writer can append to
	// the log while it is being removed. Outbox and token rows cascade.
	tag, err := t.tx.Exec(ctx, `DELETE FROM sporectl.spores WHERE id = $1`, id)
	if err != nil {
		return classify(op, err)
	}
	if tag.RowsAffected() == 0 {
		return state.SporeNotFound(id)
	}
	_, err = t.tx.Exec(ctx, `DELETE FROM sporectl.events WHERE spore_id = $1`, id)
	if err != nil {
		return classify(op, err)
	}
	// A watcher of the deleted log learns at commit that it is gone, as it
	// learns of appends (notify.go).
	_, err = t.tx.Exec(ctx, `SELECT pg_notify('`+EventsChannel+`', $1)`, id)
	return classify(op, err)
}
