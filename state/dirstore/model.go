package dirstore

import (
	"maps"
	"slices"

	"github.com/sporectl/sporectl/state"
)

// logHead is how much of a spore's event log is committed (format §4).
type logHead struct {
	File    string `json:"file"`     // name under events/
	Size    int64  `json:"size"`     // committed bytes; bytes past it are not
	LastSeq uint64 `json:"last_seq"` // seq of the last committed event
}

// row is everything the store keeps about one spore except its events.
// Rows are immutable once built: a transaction replaces them whole.
type row struct {
	Spore  state.Spore         `json:"spore"`
	Log    logHead             `json:"log"`
	Outbox []state.OutboxEntry `json:"outbox,omitempty"`
	Token  state.TokenHash     `json:"token,omitempty"`
}

// model is the committed state as of one commit-log position. A model is
// never modified once published; commits build a new one.
type model struct {
	gen      uint64 // snapshot generation; the live log is txlog.<gen>
	txid     uint64 // last committed transaction
	settings state.Settings
	rows     map[string]*row
	sorted   []string // ids in order, built lazily by ids()
}

func (m *model) ids() []string {
	if m.sorted == nil || len(m.sorted) != len(m.rows) {
		ids := slices.Collect(maps.Keys(m.rows))
		slices.Sort(ids)
		m.sorted = ids
	}
	return m.sorted
}

// txRecord is one committed transaction: the new value of every row it
// touched (nil: deleted) and of the settings, if changed (format §3).
type txRecord struct {
	TxID     uint64          `json:"tx"`
	At       string          `json:"at"`
	Settings *state.Settings `json:"settings,omitempty"`
	Rows     map[string]*row `json:"rows,omitempty"`
}

// clone returns a copy that can be changed without touching m.
func (m *model) clone() *model {
	n := &model{gen: m.gen, txid: m.txid, settings: m.settings, rows: maps.Clone(m.rows), sorted: m.sorted}
	if n.rows == nil {
		n.rows = map[string]*row{}
	}
	return n
}

// applyInPlace applies rec to m, which must not be published yet.
func (m *model) applyInPlace(rec *txRecord) {
	m.txid = rec.TxID
	if rec.Settings != nil {
		m.settings = *rec.Settings
	}
	for id, r := range rec.Rows {
		_, had := m.rows[id]
		if r == nil {
			delete(m.rows, id)
		} else {
			m.rows[id] = r
		}
		if had != (r != nil) {
			m.sorted = nil
		}
	}
}
