package dirstore

import (
	"context"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/sporectl/sporectl/state"
)

// tx is a transaction over an immutable base model. Writes go to an
// overlay of whole rows and to per-spore buffers of encoded event lines;
// nothing touches disk before commit.
type tx struct {
	s     *Store
	base  *model
	write bool
	now   time.Time
	txid  uint64

	rows     map[string]*row // replaced rows; nil marks a deletion
	settings *state.Settings
	pending  map[string]*pendingLog
	removed  []logRef // event logs to remove after commit
	// compact: compact right after the commit, whatever the commit log's
	// size, so that no line of state.json holds a row set aside (repair).
	compact bool
}

// logRef names a spore's event log.
type logRef struct{ id, file string }

// pendingLog is a spore's events appended in this transaction.
type pendingLog struct {
	committed logHead // the log as committed before this transaction
	buf       []byte
	events    []state.Event
}

var _ state.Tx = (*tx)(nil)

func newTx(s *Store, m *model, write bool) *tx {
	return &tx{s: s, base: m, write: write, now: state.Stamp(s.opts.Now()), txid: m.txid + 1}
}

func (t *tx) dirty() bool { return len(t.rows) > 0 || t.settings != nil }

func (t *tx) record() *txRecord {
	return &txRecord{TxID: t.txid, At: nowString(t.now), Settings: t.settings, Rows: t.rows}
}

// get is id's row as this transaction sees it; a base row that does not
// decode is a *state.CorruptError.
func (t *tx) get(id string) (*row, bool, error) {
	if r, ok := t.rows[id]; ok {
		return r, r != nil, nil
	}
	return t.base.get(id)
}

// has reports whether id has a row, without decoding it.
func (t *tx) has(id string) (bool, error) {
	if r, ok := t.rows[id]; ok {
		return r != nil, nil
	}
	return t.base.has(id)
}

func (t *tx) mustGet(id string) (*row, error) {
	r, ok, err := t.get(id)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("spore %s: %w", id, state.ErrNotFound)
	}
	return r, nil
}

func (t *tx) put(r *row) {
	if t.rows == nil {
		t.rows = map[string]*row{}
	}
	t.rows[r.Spore.ID] = r
}

func (t *tx) writable() error {
	if !t.write {
		return state.ErrReadOnly
	}
	return nil
}

func (t *tx) Settings(ctx context.Context) (state.Settings, error) {
	if t.settings != nil {
		return *t.settings, nil
	}
	return t.base.settings, nil
}

func (t *tx) PutSettings(ctx context.Context, s state.Settings) error {
	if err := t.writable(); err != nil {
		return err
	}
	if err := s.Validate(); err != nil {
		return err
	}
	t.settings = &s
	return nil
}

func (t *tx) Spore(ctx context.Context, id string) (state.Spore, error) {
	r, err := t.mustGet(id)
	if err != nil {
		return state.Spore{}, err
	}
	return r.Spore, nil
}

// ids is every spore's id as this transaction sees them, sorted.
func (t *tx) ids() ([]string, error) {
	base, err := t.base.ids()
	if err != nil || len(t.rows) == 0 {
		return base, err
	}
	ids := slices.Clone(base)
	for id, r := range t.rows {
		i, inBase := slices.BinarySearch(ids, id)
		switch {
		case r == nil && inBase:
			ids = slices.Delete(ids, i, i+1)
		case r != nil && !inBase:
			ids = slices.Insert(ids, i, id)
		}
	}
	return ids, nil
}

func (t *tx) Spores(ctx context.Context) ([]state.Spore, error) {
	// A read of the fleet decodes what is left of it on every core first.
	if err := t.base.decodeAll(); err != nil {
		return nil, err
	}
	ids, err := t.ids()
	if err != nil {
		return nil, err
	}
	out := make([]state.Spore, 0, len(ids))
	var dmg state.DamagedError
	for _, id := range ids {
		r, _, err := t.get(id)
		if err != nil {
			if damaged(&dmg, id, err) {
				continue
			}
			return nil, err
		}
		out = append(out, r.Spore)
	}
	return out, dmg.OrNil()
}

// damaged records id's damage in d when err is its row's corruption (a
// row that does not decode is that spore's alone: the whole reads leave
// it out, state.DamagedError) and reports whether it was.
func damaged(d *state.DamagedError, id string, err error) bool {
	c, ok := state.SporeDamage(err)
	if ok {
		d.Add(id, c)
	}
	return ok
}

func (t *tx) CreateSpore(ctx context.Context, s state.Spore) error {
	if err := t.writable(); err != nil {
		return err
	}
	if err := s.Validate(); err != nil {
		return err
	}
	s = s.Stamped()
	exists, err := t.has(s.ID)
	if err != nil {
		return err
	}
	if exists {
		return fmt.Errorf("spore %s: %w", s.ID, state.ErrExists)
	}
	// The log file carries the creating transaction's id, so a spore
	// deleted and created again never meets its predecessor's bytes.
	t.put(&row{Spore: s, Log: logHead{File: logFileName(s.ID, t.txid)}})
	delete(t.pending, s.ID)
	return nil
}

func (t *tx) PutWish(ctx context.Context, w state.Wish) error {
	if err := t.writable(); err != nil {
		return err
	}
	r, err := t.mustGet(w.ID)
	if err != nil {
		return err
	}
	sp := state.Spore{Wish: w, Status: r.Spore.Status}
	if err := sp.Validate(); err != nil {
		return err
	}
	if err := state.CheckWish(r.Spore.Wish, w); err != nil {
		return err
	}
	n := *r
	n.Spore = sp.Stamped()
	t.put(&n)
	return nil
}

func (t *tx) PutStatus(ctx context.Context, id string, st state.Status) error {
	if err := t.writable(); err != nil {
		return err
	}
	r, err := t.mustGet(id)
	if err != nil {
		return err
	}
	if err := state.CheckStatus(id, r.Spore.Generation, st); err != nil {
		return err
	}
	sp := state.Spore{Wish: r.Spore.Wish, Status: st}
	if err := sp.Validate(); err != nil {
		return err
	}
	n := *r
	n.Spore = sp.Stamped()
	t.put(&n)
	return nil
}

func (t *tx) DeleteSpore(ctx context.Context, id string) error {
	if err := t.writable(); err != nil {
		return err
	}
	if _, err := t.mustGet(id); err != nil {
		return err
	}
	// Its committed log goes once the deletion is committed — even an
	// empty one (a file a failed append left behind).
	file, ok, err := t.base.logFile(id)
	if err != nil {
		return err
	}
	if ok && !slices.Contains(t.removed, logRef{id, file}) {
		t.removed = append(t.removed, logRef{id, file})
	}
	if t.rows == nil {
		t.rows = map[string]*row{}
	}
	t.rows[id] = nil
	delete(t.pending, id)
	return nil
}

func (t *tx) Head(ctx context.Context, id string) (state.SporeHead, error) {
	r, err := t.mustGet(id)
	if err != nil {
		return state.SporeHead{}, err
	}
	return state.SporeHead{LastSeq: r.Log.LastSeq}, nil
}

func (t *tx) Heads(ctx context.Context) (map[string]state.SporeHead, error) {
	if err := t.base.decodeAll(); err != nil {
		return nil, err
	}
	ids, err := t.ids()
	if err != nil {
		return nil, err
	}
	out := make(map[string]state.SporeHead, len(ids))
	var dmg state.DamagedError
	for _, id := range ids {
		r, _, err := t.get(id)
		if err != nil {
			if damaged(&dmg, id, err) {
				continue
			}
			return nil, err
		}
		out[id] = state.SporeHead{LastSeq: r.Log.LastSeq}
	}
	return out, dmg.OrNil()
}

func (t *tx) Append(ctx context.Context, id string, evs []state.Event) ([]state.Event, error) {
	if err := t.writable(); err != nil {
		return nil, err
	}
	r, err := t.mustGet(id)
	if err != nil {
		return nil, err
	}
	for i := range evs {
		if err := validateEvent(&evs[i]); err != nil {
			return nil, fmt.Errorf("append event %d of %d to %s: %w", i+1, len(evs), id, err)
		}
	}
	if t.pending == nil {
		t.pending = map[string]*pendingLog{}
	}
	p := t.pending[id]
	if p == nil {
		p = &pendingLog{committed: r.Log}
		t.pending[id] = p
	}
	n := *r
	out := make([]state.Event, len(evs))
	for i, e := range evs {
		e.Seq = n.Log.LastSeq + 1
		e.At = state.Stamp(e.At)
		if e.At.IsZero() {
			e.At = t.now
		}
		before := len(p.buf)
		p.buf, err = encodeEvent(p.buf, &e)
		if err != nil {
			return nil, err
		}
		n.Log.LastSeq = e.Seq
		n.Log.Size += int64(len(p.buf) - before)
		p.events = append(p.events, e)
		out[i] = e
	}
	t.put(&n)
	return out, nil
}

func (t *tx) Events(ctx context.Context, id string, after uint64, limit int) ([]state.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r, err := t.mustGet(id)
	if err != nil {
		return nil, err
	}
	head := r.Log
	p := t.pending[id]
	if p != nil {
		head = p.committed
	}
	path, name, err := t.s.logPath(id, head.File)
	if err != nil {
		return nil, err
	}
	out, err := readEvents(path, name, head, after, limit)
	if err != nil {
		return nil, fmt.Errorf("read events of %s: %w", id, err)
	}
	if p != nil {
		for _, e := range p.events {
			if limit > 0 && len(out) >= limit {
				break
			}
			if e.Seq > after {
				out = append(out, e)
			}
		}
	}
	return out, nil
}

func (t *tx) Tail(ctx context.Context, id string, n int) ([]state.Event, error) {
	r, err := t.mustGet(id)
	if err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, nil
	}
	after := uint64(0)
	if r.Log.LastSeq > uint64(n) {
		after = r.Log.LastSeq - uint64(n)
	}
	return t.Events(ctx, id, after, 0)
}

func (t *tx) Outbox(ctx context.Context, id string) ([]state.OutboxEntry, error) {
	r, err := t.mustGet(id)
	if err != nil {
		return nil, err
	}
	return liveEntries(r.Outbox), nil
}

func (t *tx) DeadLetters(ctx context.Context, id string) ([]state.OutboxEntry, error) {
	r, err := t.mustGet(id)
	if err != nil {
		return nil, err
	}
	var out []state.OutboxEntry
	for _, e := range r.Outbox {
		if e.Dead != nil {
			out = append(out, e)
		}
	}
	return out, nil
}

// DeadLetterCounts reads the rows that may hold an outbox: those whose
// snapshot line says "outbox" (queuedIDs: a row with dead letters only is
// among them), and every row committed since the snapshot or replaced by
// this transaction (the index of committed rows knows live entries only).
func (t *tx) DeadLetterCounts(ctx context.Context) (map[string]int, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ids, err := t.base.queuedIDs()
	if err != nil {
		return nil, err
	}
	for id := range t.base.rows {
		ids[id] = struct{}{}
	}
	for id := range t.rows {
		ids[id] = struct{}{}
	}
	out := map[string]int{}
	for id := range ids {
		r, ok, err := t.get(id)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue // deleted
		}
		n := 0
		for _, e := range r.Outbox {
			if e.Dead != nil {
				n++
			}
		}
		if n > 0 {
			out[id] = n
		}
	}
	return out, nil
}

// liveEntries is a row's outbox without its dead letters, which the row keeps
// in the same list (format §3), marked.
func liveEntries(all []state.OutboxEntry) []state.OutboxEntry {
	var out []state.OutboxEntry
	for _, e := range all {
		if e.Dead == nil {
			out = append(out, e)
		}
	}
	return out
}

// Pending reads the queued ids index of the base model and the rows this
// transaction replaced, so its cost is what is queued plus what the
// transaction touched, never the decoding of the whole fleet (the index
// of the snapshot's rows comes from their lines, read once).
func (t *tx) Pending(ctx context.Context) (map[string][]state.OutboxEntry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	queued, err := t.base.queuedIDs()
	if err != nil {
		return nil, err
	}
	out := make(map[string][]state.OutboxEntry, len(queued))
	var dmg state.DamagedError
	for id := range queued {
		if _, replaced := t.rows[id]; !replaced {
			r, _, err := t.base.get(id)
			if err != nil {
				if damaged(&dmg, id, err) {
					continue
				}
				return nil, err
			}
			if q := liveEntries(r.Outbox); len(q) > 0 {
				out[id] = q
			}
		}
	}
	for id, r := range t.rows {
		if r == nil {
			continue
		}
		if q := liveEntries(r.Outbox); len(q) > 0 {
			out[id] = q
		}
	}
	return out, dmg.OrNil()
}

// ValidateEntryID: outbox ids are idempotency keys chosen by callers.
func validateEntry(e *state.OutboxEntry) error {
	if e.ID == "" || len(e.ID) > 128 {
		return &state.InvalidError{Field: "message id", Value: e.ID, Reason: "must be 1 to 128 characters"}
	}
	for i := 0; i < len(e.ID); i++ {
		if c := e.ID[i]; c <= ' ' || c >= 0x7f {
			return &state.InvalidError{Field: "message id", Value: e.ID, Reason: "must be printable ASCII without spaces"}
		}
	}
	if !utf8.ValidString(e.Text) || !utf8.ValidString(e.From) {
		return &state.InvalidError{Field: "message text", Value: "(binary)", Reason: "is not valid UTF-8"}
	}
	return nil
}

func (t *tx) Enqueue(ctx context.Context, e state.OutboxEntry) (bool, error) {
	if err := t.writable(); err != nil {
		return false, err
	}
	if err := validateEntry(&e); err != nil {
		return false, err
	}
	if e.Dead != nil {
		return false, &state.InvalidError{Field: "message " + e.ID, Value: "dead", Reason: "a queued entry is not dead; only Bury makes a dead letter"}
	}
	r, err := t.mustGet(e.Spore)
	if err != nil {
		return false, err
	}
	for _, q := range r.Outbox {
		if q.ID == e.ID {
			return false, nil
		}
	}
	e.At = state.Stamp(e.At)
	if e.At.IsZero() {
		e.At = t.now
	}
	n := *r
	n.Outbox = append(slices.Clip(slices.Clone(r.Outbox)), e)
	t.put(&n)
	return true, nil
}

func (t *tx) Dequeue(ctx context.Context, spore, entryID string) error {
	if err := t.writable(); err != nil {
		return err
	}
	r, err := t.mustGet(spore)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(r.Outbox, func(q state.OutboxEntry) bool { return q.ID == entryID })
	if i < 0 {
		return fmt.Errorf("message %s for %s: %w", entryID, spore, state.ErrNotFound)
	}
	n := *r
	n.Outbox = slices.Delete(slices.Clone(r.Outbox), i, i+1)
	if len(n.Outbox) == 0 {
		n.Outbox = nil
	}
	t.put(&n)
	return nil
}

func (t *tx) Bury(ctx context.Context, spore, entryID string, d state.DeadLetter) error {
	if err := t.writable(); err != nil {
		return err
	}
	d.At = state.Stamp(d.At)
	if err := state.CheckDeadLetter(d); err != nil {
		return err
	}
	r, err := t.mustGet(spore)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(r.Outbox, func(q state.OutboxEntry) bool { return q.ID == entryID && q.Dead == nil })
	if i < 0 {
		return fmt.Errorf("queued message %s for %s: %w", entryID, spore, state.ErrNotFound)
	}
	n := *r
	n.Outbox = slices.Clone(r.Outbox)
	n.Outbox[i].Dead = &d
	t.put(&n)
	return nil
}

func (t *tx) TokenHash(ctx context.Context, id string) (state.TokenHash, error) {
	r, err := t.mustGet(id)
	if err != nil {
		return "", err
	}
	if r.Token == "" {
		return "", fmt.Errorf("token of %s: %w", id, state.ErrNotFound)
	}
	return r.Token, nil
}

func (t *tx) SetTokenHash(ctx context.Context, id string, h state.TokenHash) error {
	if err := t.writable(); err != nil {
		return err
	}
	if !h.Valid() {
		return &state.InvalidError{Field: "token hash", Value: "(redacted)", Reason: "must be 64 lowercase hex digits (a SHA-256); plaintext tokens are never stored"}
	}
	r, err := t.mustGet(id)
	if err != nil {
		return err
	}
	n := *r
	n.Token = h
	t.put(&n)
	return nil
}
