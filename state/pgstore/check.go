package pgstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sporectl/sporectl/state"
)

// Check verifies, in one read-only snapshot, the invariants that the
// schema's constraints cannot express: per-spore sequences are gapless
// 1..last_seq, every row belongs to an existing spore, stored text is valid
// UTF-8 and lines valid JSON, spore rows pass their grammar, and the
// settings row exists. It writes nothing.
func (s *Store) Check(ctx context.Context) (*state.CheckReport, error) {
	rep := &state.CheckReport{Problems: []state.Problem{}, Notes: []state.Problem{}}
	err := s.View(ctx, func(stx state.Tx) error {
		t := stx.(*tx)
		for _, step := range []func(context.Context, queryer, *state.CheckReport) error{
			checkVersion, checkSettings, checkSpores, checkHeads, checkOrphans, checkOutboxRows, checkEventRows, checkDamaged,
		} {
			if err := step(ctx, t.tx, rep); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, s.red.redact(fmt.Errorf("check %s: %w", s.location, err))
	}
	return rep, nil
}

func problem(rep *state.CheckReport, where, format string, args ...any) {
	rep.Problems = append(rep.Problems, state.Problem{Where: where, Message: fmt.Sprintf(format, args...)})
}

func checkVersion(ctx context.Context, tx queryer, rep *state.CheckReport) error {
	var v int
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM sporectl.schema_version`).Scan(&v); err != nil {
		return classify("read schema version", err)
	}
	if v != latestVersion() {
		problem(rep, "sporectl.schema_version", "schema version %d, this sporectl expects %d", v, latestVersion())
	}
	return nil
}

func checkSettings(ctx context.Context, tx queryer, rep *state.CheckReport) error {
	rows, err := tx.Query(ctx, `SELECT doc::text FROM sporectl.settings`)
	if err != nil {
		return classify("read settings", err)
	}
	docs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return classify("read settings", err)
	}
	if len(docs) != 1 {
		problem(rep, "sporectl.settings", "%d settings rows, want exactly 1", len(docs))
	}
	for _, d := range docs {
		var st state.Settings
		if err := json.Unmarshal([]byte(d), &st); err != nil {
			problem(rep, "sporectl.settings", "not a settings document: %v", err)
		} else if err := st.Validate(); err != nil {
			problem(rep, "sporectl.settings", "%v", err)
		}
	}
	return nil
}

func checkSpores(ctx context.Context, tx queryer, rep *state.CheckReport) error {
	rows, err := tx.Query(ctx, `SELECT `+sporeColumns+` FROM sporectl.spores ORDER BY id`)
	if err != nil {
		return classify("read spores", err)
	}
	defer rows.Close()
	for rows.Next() {
		rep.Spores++
		sp, err := scanSpore(rows)
		if err != nil {
			problem(rep, "sporectl.spores", "%v", err)
			continue
		}
		checkValues(rep, sp)
	}
	return classify("read spores", rows.Err())
}

// checkHeads relies on (spore_id, seq) being unique: then count = max and
// min = 1 means exactly 1..max, and max = last_seq means the head matches.
func checkHeads(ctx context.Context, tx queryer, rep *state.CheckReport) error {
	rows, err := tx.Query(ctx, `SELECT s.id, s.last_seq, coalesce(e.n, 0), coalesce(e.lo, 0), coalesce(e.hi, 0)
		FROM sporectl.spores s
		LEFT JOIN (SELECT spore_id, count(*) AS n, min(seq) AS lo, max(seq) AS hi
			FROM sporectl.events GROUP BY spore_id) e ON e.spore_id = s.id
		ORDER BY s.id`)
	if err != nil {
		return classify("compare heads with events", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var last, n, lo, hi int64
		if err := rows.Scan(&id, &last, &n, &lo, &hi); err != nil {
			return classify("compare heads with events", err)
		}
		where := "sporectl.events spore_id=" + id
		switch {
		case n == 0 && last != 0:
			problem(rep, where, "no events but last_seq is %d", last)
		case n > 0 && (lo != 1 || hi != n):
			problem(rep, where, "sequence has gaps: %d events numbered %d..%d", n, lo, hi)
		case n > 0 && hi != last:
			problem(rep, where, "last event is %d but last_seq is %d", hi, last)
		}
	}
	return classify("compare heads with events", rows.Err())
}

func checkOrphans(ctx context.Context, tx queryer, rep *state.CheckReport) error {
	for _, table := range []string{"events", "outbox", "tokens"} {
		// table comes from the fixed list above, never from input.
		rows, err := tx.Query(ctx, `SELECT r.spore_id, count(*) FROM sporectl.`+table+` r
			WHERE NOT EXISTS (SELECT 1 FROM sporectl.spores s WHERE s.id = r.spore_id)
			GROUP BY r.spore_id ORDER BY r.spore_id`)
		if err != nil {
			return classify("look for orphan "+table, err)
		}
		for rows.Next() {
			var id string
			var n int64
			if err := rows.Scan(&id, &n); err != nil {
				rows.Close()
				return classify("look for orphan "+table, err)
			}
			problem(rep, "sporectl."+table+" spore_id="+id, "%d rows for a spore that does not exist", n)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return classify("look for orphan "+table, err)
		}
	}
	return nil
}

func checkOutboxRows(ctx context.Context, tx queryer, rep *state.CheckReport) error {
	rows, err := tx.Query(ctx, `SELECT spore_id, id, sender, body, dead_at, dead_reason FROM sporectl.outbox ORDER BY spore_id, pos`)
	if err != nil {
		return classify("read outbox", err)
	}
	defer rows.Close()
	var spore, id string
	var sender, body []byte
	for rows.Next() {
		var deadAt *time.Time
		var reason *string
		if err := rows.Scan(&spore, &id, &sender, &body, &deadAt, &reason); err != nil {
			return classify("read outbox", err)
		}
		where := fmt.Sprintf("sporectl.outbox spore_id=%s id=%q", spore, id)
		if err := checkEntry(&state.OutboxEntry{ID: id, Spore: spore, From: string(sender), Text: string(body)}); err != nil {
			problem(rep, where, "%v", err)
		}
		if deadAt != nil && reason != nil {
			if err := state.CheckDeadLetter(state.DeadLetter{Reason: *reason, At: *deadAt}); err != nil {
				problem(rep, where, "%v", err)
			}
		}
	}
	return classify("read outbox", rows.Err())
}

// checkEventRows reads every event once; it is the only O(history) step.
// What it names in a row is what a repair replaces (eventDamage).
func checkEventRows(ctx context.Context, tx queryer, rep *state.CheckReport) error {
	rows, err := tx.Query(ctx, `SELECT spore_id, seq, kind, bridge_seq, action, sender, body, line FROM sporectl.events`)
	if err != nil {
		return classify("read events", err)
	}
	defer rows.Close()
	var id, kind string
	var seq, bseq int64
	var action, sender, body, line []byte
	for rows.Next() {
		if err := rows.Scan(&id, &seq, &kind, &bseq, &action, &sender, &body, &line); err != nil {
			return classify("read events", err)
		}
		rep.Events++
		for _, why := range eventDamage(kind, bseq, action, sender, body, line) {
			problem(rep, fmt.Sprintf("sporectl.events spore_id=%s seq=%d", id, seq), "%s", why)
		}
	}
	return classify("read events", rows.Err())
}

// checkDamaged notes what sporectl.damaged holds: rows a repair set aside
// for a person, which are not store data and are not checked.
func checkDamaged(ctx context.Context, tx queryer, rep *state.CheckReport) error {
	var n, spores int64
	err := tx.QueryRow(ctx, `SELECT count(*), count(DISTINCT spore_id) FROM `+damagedTable).Scan(&n, &spores)
	if err != nil {
		return classify("count the rows set aside", err)
	}
	if n > 0 {
		rep.Notes = append(rep.Notes, state.Problem{Where: damagedTable,
			Message: fmt.Sprintf("%d row(s) of %d spore(s) set aside by repair; kept for a person, never read by sporectl", n, spores)})
	}
	return nil
}
