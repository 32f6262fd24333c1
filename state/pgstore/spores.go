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

// The spores table's columns, the wish's then the status's: PutWish and
// PutStatus each write only their own (last_seq is the log's, Append's).
const (
	wishColumns = `id, colony, rank, swarm, role, desired, spec_image, spec_cpu, spec_memory, spec_storage,
	created, updated, generation, loop_interval_ms, spec_pod, sleep_after_ms, desired_by,
	budget_tokens_per_day, budget_cost_per_day_micros`
	statusColumns = `observed_generation, restarts, failures, not_before, breaker_open, bridge_seq,
	health, health_reason, loop_due, activity, incidents, active_at, model_usage, model_calls,
	model_grant_until`
	sporeColumns = wishColumns + `, ` + statusColumns
)

func scanSpore(row pgx.Row) (state.Spore, error) {
	var (
		sp            state.Spore
		rank, desired string
		failures      *[]time.Time // nil for NULL, so nil and empty stay apart
		notBefore     *time.Time
		bridgeSeq     int64
		generation    int64
		observed      int64
		loopMS        int64
		loopDue       *time.Time
		activity      []byte // json; NULL: none
		incidents     []byte
		pod           []byte // json; NULL: no pod options
		sleepMS       int64
		desiredBy     string
		activeAt      *time.Time
		modelUsage    []byte // gateway.go's forms; NULL: none
		modelCalls    []byte
		grantUntil    *time.Time
	)
	err := row.Scan(&sp.ID, &sp.Colony, &rank, &sp.Swarm, &sp.Role, &desired,
		&sp.Spec.Image, &sp.Spec.CPU, &sp.Spec.Memory, &sp.Spec.Storage,
		&sp.Created, &sp.Updated, &generation, &loopMS, &pod, &sleepMS, &desiredBy,
		&sp.Budget.TokensPerDay, &sp.Budget.CostPerDayMicros,
		&observed, &sp.Restarts, &failures, &notBefore, &sp.BreakerOpen, &bridgeSeq,
		&sp.Health, &sp.HealthReason, &loopDue, &activity, &incidents, &activeAt,
		&modelUsage, &modelCalls, &grantUntil)
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
	if observed < 0 {
		return sp, corrupt("sporectl.spores", "id="+sp.ID, "negative observed_generation")
	}
	sp.ObservedGeneration = uint64(observed)
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
	if grantUntil != nil {
		sp.GrantUntil = grantUntil.UTC()
	}
	if err := scanGateway(&sp.GatewayRecord, modelUsage, modelCalls); err != nil {
		return sp, corrupt("sporectl.spores", "id="+sp.ID, err.Error())
	}
	if incidents != nil {
		if err := json.Unmarshal(incidents, &sp.Incidents); err != nil {
			return sp, corrupt("sporectl.spores", "id="+sp.ID, "incidents: "+err.Error())
		}
	}
	if pod != nil {
		sp.Spec.Pod = new(state.PodOptions)
		if err := json.Unmarshal(pod, sp.Spec.Pod); err != nil {
			return sp, corrupt("sporectl.spores", "id="+sp.ID, "spec_pod: "+err.Error())
		}
	}
	if err := sp.Validate(); err != nil {
		return sp, corrupt("sporectl.spores", "id="+sp.ID, err.Error())
	}
	return sp, nil
}

func (t *tx) Spore(ctx context.Context, id string) (state.Spore, error) {
	if sp, ok := t.prefetched[id]; ok {
		delete(t.prefetched, id)
		return sp, nil
	}
	if err := t.orderRow(ctx, "read spore "+id, id); err != nil {
		return state.Spore{}, err
	}
	// The head comes along: the pass reads a spore's record and then its
	// head, and the snapshot (in a View) or the row lock (in an Update)
	// keeps both still.
	last := int64(-1)
	var row pgx.Row
	var hash *string
	if t.readOnly {
		// So does its token's hash: a caller is read to be
		// authenticated (mycelia/auth), its record and then its hash.
		row = withLast{t.tx.QueryRow(ctx, `SELECT `+sporeColumns+`, last_seq,
			(SELECT hash FROM sporectl.tokens WHERE spore_id = $1) FROM sporectl.spores WHERE id = $1`, id), &last, &hash}
	} else {
		row = withLast{t.tx.QueryRow(ctx, `SELECT `+sporeColumns+`, last_seq FROM sporectl.spores WHERE id = $1`+t.lockClause(), id), &last, nil}
	}
	sp, err := scanSpore(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return sp, state.SporeNotFound(id)
	}
	if err != nil {
		return sp, sporeErr("read spore "+id, err)
	}
	t.found(id, last)
	if t.readOnly {
		if t.tokens == nil {
			t.tokens = map[string]*string{}
		}
		t.tokens[id] = hash
	}
	return sp, nil
}

// withLast scans a spore row followed by its last_seq and, when hash is
// set, its token's hash (NULL for none).
type withLast struct {
	pgx.Row
	last *int64
	hash **string
}

func (r withLast) Scan(dest ...any) error {
	dest = append(dest, r.last)
	if r.hash != nil {
		dest = append(dest, r.hash)
	}
	return r.Row.Scan(dest...)
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
	var dmg state.DamagedError
	for rows.Next() {
		sp, err := scanSpore(rows)
		if c, ok := state.SporeDamage(err); ok && sp.ID != "" {
			// One row's impossible value is that spore's damage, not
			// every reader's: the others are read (state.DamagedError).
			dmg.Add(sp.ID, c)
			continue
		}
		if err != nil {
			return nil, sporeErr("list spores", err)
		}
		out = append(out, sp)
	}
	if err := rows.Err(); err != nil {
		return nil, t.refuseRows("list spores", err, all)
	}
	t.tookAll(lock, len(out), func(i int) string { return out[i].ID })
	return out, dmg.OrNil()
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
	return append(wishArgs(&sp.Wish), statusArgs(&sp.Status)...)
}

// wishArgs are the values for wishColumns, in order.
func wishArgs(w *state.Wish) []any {
	return []any{w.ID, w.Colony, string(w.Rank), w.Swarm, w.Role, string(w.Desired),
		w.Spec.Image, w.Spec.CPU, w.Spec.Memory, w.Spec.Storage,
		w.Created, w.Updated, int64(w.Generation), time.Duration(w.Loop).Milliseconds(), podOrNull(w.Spec.Pod),
		time.Duration(w.SleepAfter).Milliseconds(), string(w.DesiredBy), w.Budget.TokensPerDay, w.Budget.CostPerDayMicros}
}

// statusArgs are the values for statusColumns, in order.
func statusArgs(st *state.Status) []any {
	var failures any
	if st.Failures != nil {
		failures = st.Failures
	}
	var notBefore any
	if !st.NotBefore.IsZero() {
		notBefore = st.NotBefore
	}
	var loopDue any
	if !st.LoopDue.IsZero() {
		loopDue = st.LoopDue
	}
	var activeAt any
	if !st.ActiveAt.IsZero() {
		activeAt = st.ActiveAt
	}
	var grantUntil any
	if !st.GrantUntil.IsZero() {
		grantUntil = st.GrantUntil
	}
	return []any{int64(st.ObservedGeneration), st.Restarts, failures, notBefore, st.BreakerOpen, int64(st.BridgeSeq),
		string(st.Health), st.HealthReason, loopDue, encodeActivity(st.Activity), jsonOrNull(st.Incidents), activeAt,
		encodeModelUsage(st.ModelUsage), encodeModelCalls(st.ModelCalls), grantUntil}
}

// podOrNull is p as a json column: NULL for none. Marshalling plain
// strings, maps and slices cannot fail.
func podOrNull(p *state.PodOptions) any {
	if p == nil {
		return nil
	}
	b, err := json.Marshal(p)
	if err != nil {
		panic(fmt.Sprintf("pgstore: marshal pod options: %v", err))
	}
	return string(b)
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
		$25, $26, $27, $28, $29, $30, $31, $32, $33, $34)
		ON CONFLICT (id) DO NOTHING`, sporeArgs(&sp)...)
	if err != nil {
		return classify("create spore "+sp.ID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("create spore %q: %w", sp.ID, state.ErrExists)
	}
	t.held.found(sp.ID) // a row inserted is this transaction's alone
	return nil
}

// PutWish and PutStatus each write their own columns with one UPDATE whose
// WHERE holds the write rule (state.CheckWish, state.CheckStatus): the
// rule is judged against the row as the UPDATE finds it, after waiting for
// its lock, whatever the caller read before. Only when no row matched is
// the row read, to say why.

func (t *tx) PutWish(ctx context.Context, w state.Wish) error {
	if err := t.writable("put wish"); err != nil {
		return err
	}
	if err := checkWish(&w); err != nil {
		return err
	}
	return t.guardedUpdate(ctx, "put wish of spore "+w.ID, w.ID,
		`UPDATE sporectl.spores SET colony = $2, rank = $3, swarm = $4, role = $5, desired = $6,
		spec_image = $7, spec_cpu = $8, spec_memory = $9, spec_storage = $10, created = $11, updated = $12,
		generation = $13, loop_interval_ms = $14, spec_pod = $15, sleep_after_ms = $16, desired_by = $17,
		budget_tokens_per_day = $18, budget_cost_per_day_micros = $19
		WHERE id = $1 AND generation < $13`, wishArgs(&w),
		func(stored uint64) error { return state.CheckWish(state.Wish{ID: w.ID, Generation: stored}, w) })
}

func (t *tx) PutStatus(ctx context.Context, id string, st state.Status) error {
	if err := t.writable("put status"); err != nil {
		return err
	}
	// No spore has an id outside the grammar (CreateSpore validates it),
	// and such an id may hold a NUL byte, which would abort the
	// transaction as a text parameter.
	if state.ValidateID(id) != nil {
		return state.SporeNotFound(id)
	}
	if err := checkStatus(&st); err != nil {
		return err
	}
	return t.guardedUpdate(ctx, "put status of spore "+id, id,
		`UPDATE sporectl.spores SET observed_generation = $2, restarts = $3, failures = $4, not_before = $5,
		breaker_open = $6, bridge_seq = $7, health = $8, health_reason = $9, loop_due = $10,
		activity = $11, incidents = $12, active_at = $13, model_usage = $14, model_calls = $15,
		model_grant_until = $16
		WHERE id = $1 AND generation = $2`, append([]any{id}, statusArgs(&st)...),
		func(stored uint64) error { return state.CheckStatus(id, stored, st) })
}

// guardedUpdate runs update, an UPDATE of spore id's row whose WHERE holds
// a write rule. No row updated means no such spore, or the rule refused
// the write: the row is then locked and read, and judge, given the stored
// generation, returns the rule's error. A judge that finds nothing wrong
// means the row changed between the two statements (the UPDATE does not
// lock a row it does not match); now that it is held, the UPDATE runs once
// more and sees what judge saw.
func (t *tx) guardedUpdate(ctx context.Context, op, id, update string, args []any, judge func(stored uint64) error) error {
	t.wroteSpore(id)
	if err := t.orderRow(ctx, op, id); err != nil {
		return err
	}
	for range 2 {
		tag, err := t.tx.Exec(ctx, update, args...)
		if err != nil {
			return classify(op, err)
		}
		if tag.RowsAffected() > 0 {
			return nil
		}
		var stored int64
		err = t.tx.QueryRow(ctx, `SELECT generation FROM sporectl.spores WHERE id = $1 FOR UPDATE`, id).Scan(&stored)
		if errors.Is(err, pgx.ErrNoRows) {
			return state.SporeNotFound(id)
		}
		if err != nil {
			return classify(op, err)
		}
		if stored < 0 {
			return corrupt("sporectl.spores", "id="+id, "negative generation")
		}
		if err := judge(uint64(stored)); err != nil {
			return err
		}
	}
	// The row is held since the read above; an UPDATE that still matches
	// nothing means the statement and the rule disagree.
	return fmt.Errorf("%s: the update matched no row though the write is allowed", op)
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
	delete(t.held.rows, id)
	delete(t.seen, id)
	t.wroteSpore(id)
	delete(t.outboxes, id)
	_, err = t.tx.Exec(ctx, `DELETE FROM sporectl.events WHERE spore_id = $1`, id)
	if err != nil {
		return classify(op, err)
	}
	// A watcher of the deleted log learns at commit that it is gone, as it
	// learns of appends (notify.go).
	_, err = t.tx.Exec(ctx, `SELECT pg_notify('`+EventsChannel+`', $1)`, id)
	return classify(op, err)
}
