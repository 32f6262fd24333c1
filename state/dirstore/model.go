package dirstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/sporectl/sporectl/state"
)

// logHead is how much of a spore's event log is committed (format §4).
type logHead struct {
	File    string `json:"file"`     // name under events/
	Size    int64  `json:"size"`     // committed bytes; bytes past it are not
	LastSeq uint64 `json:"last_seq"` // seq of the last committed event
}

// row is everything the store keeps about one spore except its events.
// Rows are immutable once built: a transaction replaces them whole. On
// disk a row is a rowJSON.
type row struct {
	Spore  state.Spore
	Log    logHead
	Outbox []state.OutboxEntry
	Token  state.TokenHash
}

// splitFormat is the first format whose rows hold a spore's wish and its
// status apart (format §3, §10).
const splitFormat = 5

// rowJSON is a row as the format writes it (format §3): since format 5 the
// spore record is two objects, "wish" and "status", split the way the
// types are, so a binary that knows only the flat record refuses the row
// instead of misreading it. Formats 1 to 4 held one flat "spore" object;
// it is read only from a file of those formats (toRow), which only the
// upgrade reads.
type rowJSON struct {
	Wish   *state.Wish         `json:"wish,omitempty"`
	Status *state.Status       `json:"status,omitempty"`
	Spore  *state.Spore        `json:"spore,omitempty"` // formats 1 to 4
	Log    logHead             `json:"log"`
	Outbox []state.OutboxEntry `json:"outbox,omitempty"`
	Token  state.TokenHash     `json:"token,omitempty"`
}

// MarshalJSON writes r in this format's form: wish and status apart.
func (r row) MarshalJSON() ([]byte, error) {
	return json.Marshal(rowJSON{Wish: &r.Spore.Wish, Status: &r.Spore.Status, Log: r.Log, Outbox: r.Outbox, Token: r.Token})
}

// UnmarshalJSON refuses: which form a row may have depends on the format
// of the file holding it, which only the decoders know (they decode a
// rowJSON and call toRow). Without it encoding/json would fill a row by
// its Go field names, which match the keys of format 4 case-insensitively.
func (r *row) UnmarshalJSON([]byte) error {
	return errors.New("a row is decoded through rowJSON.toRow, with the format of its file")
}

// toRow fills r from j, read from a file of the given format, or says why
// j is not a row of that format: each format has exactly one form.
func (j *rowJSON) toRow(r *row, format int) string {
	if format >= splitFormat {
		switch {
		case j.Spore != nil:
			return fmt.Sprintf(`row holds "spore", the record of formats 1 to 4; a format-%d row holds "wish" and "status"`, format)
		case j.Wish == nil:
			return `row has no "wish"`
		case j.Status == nil:
			return `row has no "status"`
		}
		*r = row{Spore: state.Spore{Wish: *j.Wish, Status: *j.Status}, Log: j.Log, Outbox: j.Outbox, Token: j.Token}
		return ""
	}
	switch {
	case j.Wish != nil || j.Status != nil:
		return fmt.Sprintf(`row holds "wish" or "status", which format %d does not have (its record is "spore")`, format)
	case j.Spore == nil:
		return `row has no "spore"`
	}
	*r = row{Spore: *j.Spore, Log: j.Log, Outbox: j.Outbox, Token: j.Token}
	return ""
}

// model is the committed state as of one commit-log position: the rows
// of its snapshot (snapRows: found by id, or read whole when a read needs
// every row) under the rows committed since. A model is never modified
// once published; commits build a new one.
type model struct {
	gen      uint64 // snapshot generation; the live log is txlog.<gen>
	format   int    // format of the snapshot it was read from (format §10)
	base     uint64 // the snapshot's last transaction: txlog.<gen> follows it
	txid     uint64 // last committed transaction
	settings state.Settings
	// snap is the rows of state.json as read; nil for a model made in
	// memory (init). rows are the rows committed since, which replace
	// the snapshot's: a nil row is a deleted spore. Read them through
	// get, has, logFile and ids.
	snap *snapRows
	rows map[string]*row
	// sorted is the ids in order, built lazily by ids(). Readers of a
	// published model build it concurrently, hence mu.
	mu     sync.Mutex
	sorted []string
	// queued holds the ids of rows whose outbox holds an entry that is
	// not a dead letter, kept up to date by setRow, so Pending costs what is queued, not the fleet.
	// The snapshot's rows add theirs (snapContent.queued).
	queued map[string]struct{}
}

// newModel is the state as of snapshot snap, before its commit log.
func newModel(snap *snapRows) *model {
	h := snap.header
	return &model{gen: h.Gen, format: h.Format, base: h.TxID, txid: h.TxID, settings: h.Settings, snap: snap, rows: map[string]*row{}}
}

// keepSortedUpTo is how many rows a transaction may touch and setRow
// still keep the sorted ids up to date (one copy of them per create or
// delete); a larger one drops them, to be sorted once when next asked for.
const keepSortedUpTo = 16

// setRow replaces (r != nil) or deletes (r == nil) the row of id in a
// model that is not published yet, keeping the indexes.
func (m *model) setRow(id string, r *row) {
	m.rows[id] = r
	if m.sorted != nil {
		// Kept sorted rather than rebuilt: a commit of a few creates or
		// deletes costs a copy of the ids, not a sort. The slice may be a
		// published model's (clone shares it): a new one is made.
		i, had := slices.BinarySearch(m.sorted, id)
		switch {
		case r != nil && !had:
			m.sorted = slices.Insert(slices.Clip(m.sorted), i, id)
		case r == nil && had:
			m.sorted = append(slices.Clip(m.sorted[:i]), m.sorted[i+1:]...)
		}
	}
	if r != nil && len(liveEntries(r.Outbox)) > 0 {
		if m.queued == nil {
			m.queued = map[string]struct{}{}
		}
		m.queued[id] = struct{}{}
	} else {
		delete(m.queued, id)
	}
}

// snapContent is the whole snapshot under the model (read on first call;
// empty for a model made in memory).
func (m *model) snapContent() (*snapContent, error) {
	if m.snap == nil {
		return &snapContent{}, nil
	}
	return m.snap.content()
}

// ids is every spore's id, sorted: it reads the whole snapshot.
func (m *model) ids() ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sorted != nil {
		return m.sorted, nil
	}
	c, err := m.snapContent()
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(c.sorted)+len(m.rows))
	for _, id := range c.sorted {
		if r, ok := m.rows[id]; !ok || r != nil {
			ids = append(ids, id)
		}
	}
	added := false
	for id, r := range m.rows {
		if _, ok := c.lazy[id]; !ok && r != nil {
			ids = append(ids, id)
			added = true
		}
	}
	if added {
		slices.Sort(ids)
	}
	m.sorted = ids
	return ids, nil
}

// find is id's row in the snapshot, nil when it has none.
func (m *model) find(id string) (*lazyRow, error) {
	if m.snap == nil {
		return nil, nil
	}
	return m.snap.find(id)
}

// has reports whether spore id has a row, without decoding it.
func (m *model) has(id string) (bool, error) {
	if r, ok := m.rows[id]; ok {
		return r != nil, nil
	}
	l, err := m.find(id)
	return l != nil, err
}

// get returns id's row, decoding it if it was not yet; a row that does
// not decode is a *state.CorruptError naming its line.
func (m *model) get(id string) (*row, bool, error) {
	if r, ok := m.rows[id]; ok {
		return r, r != nil, nil
	}
	l, err := m.find(id)
	if l == nil || err != nil {
		return nil, false, err
	}
	r, err := l.get()
	return r, true, err
}

// logFile is the name of id's event log, without decoding its row.
func (m *model) logFile(id string) (string, bool, error) {
	if r, ok := m.rows[id]; ok {
		if r == nil {
			return "", false, nil
		}
		return r.Log.File, true, nil
	}
	l, err := m.find(id)
	if l == nil || err != nil {
		return "", false, err
	}
	return l.log, true, nil
}

// queuedIDs is every spore whose outbox is not empty: it reads the whole
// snapshot (its lines, not its rows). A snapshot row whose outbox holds
// dead letters only is among them (its line says "outbox" all the same);
// Pending leaves it out once it has read the row.
func (m *model) queuedIDs() (map[string]struct{}, error) {
	c, err := m.snapContent()
	if err != nil {
		return nil, err
	}
	out := maps.Clone(m.queued)
	if out == nil {
		out = map[string]struct{}{}
	}
	for id := range c.queued {
		if _, replaced := m.rows[id]; !replaced {
			out[id] = struct{}{}
		}
	}
	return out, nil
}

// txRecord is one committed transaction: the new value of every row it
// touched (nil: deleted) and of the settings, if changed (format §3).
type txRecord struct {
	TxID     uint64          `json:"tx"`
	At       string          `json:"at"`
	Settings *state.Settings `json:"settings,omitempty"`
	Rows     map[string]*row `json:"rows,omitempty"`
}

// txRecordJSON is a txRecord as decoded, its rows not yet checked against
// the format of the log (decodeTxRecord).
type txRecordJSON struct {
	TxID     uint64              `json:"tx"`
	At       string              `json:"at"`
	Settings *state.Settings     `json:"settings,omitempty"`
	Rows     map[string]*rowJSON `json:"rows,omitempty"`
}

// clone returns a copy that can be changed without touching m.
func (m *model) clone() *model {
	m.mu.Lock()
	sorted := m.sorted
	m.mu.Unlock()
	n := &model{gen: m.gen, format: m.format, base: m.base, txid: m.txid, settings: m.settings, snap: m.snap, rows: maps.Clone(m.rows), sorted: sorted, queued: maps.Clone(m.queued)}
	if n.rows == nil {
		n.rows = map[string]*row{}
	}
	return n
}

// applyInPlace applies rec to m, which must not be published yet.
func (m *model) applyInPlace(rec *txRecord) {
	if len(rec.Rows) > keepSortedUpTo {
		// Many rows: the ids are sorted again when next asked for,
		// rather than copied once per create or delete.
		m.sorted = nil
	}
	m.txid = rec.TxID
	if rec.Settings != nil {
		m.settings = *rec.Settings
	}
	for id, r := range rec.Rows {
		m.setRow(id, r)
	}
}
