package reconcile

import (
	"time"

	"github.com/sporectl/sporectl/state"
)

// What a spore's record says after a pass, from its plan alone (no read
// of the store): the snapshot's record with what the pass's commit added
// to it. For the pass's callers that report on the fleet as it is now
// (reconcile/metrics); the commit itself builds the record it writes from
// a fresh read (commit.go).

// StoredBridgeSeq is the bridge line the store holds lines up to after
// the pass: the snapshot's, and the lines this pass ingested, which its
// commit appended (a dry run ingests nothing).
func (p *SporePlan) StoredBridgeSeq() uint64 {
	if p.Ingest == nil || len(p.Ingest.events) == 0 {
		return p.Spore.BridgeSeq
	}
	return p.Ingest.events[len(p.Ingest.events)-1].BridgeSeq
}

// Behind is how many lines the spore's bridge holds that the store does
// not, after the pass; ok is false when the bridge did not answer (its
// last line is then unknown). A bridge behind the store (its log lost)
// is 0 behind: what it lacks is the store's, not ingest's.
func (p *SporePlan) Behind() (lines uint64, ok bool) {
	if p.Observed.Bridge != BridgeUp {
		return 0, false
	}
	stored := p.StoredBridgeSeq()
	if p.Observed.BridgeLastSeq <= stored {
		return 0, true
	}
	return p.Observed.BridgeLastSeq - stored, true
}

// Activity is the spore's hourly activity after the pass at now: the
// snapshot's hours with the lines this pass ingested counted in, as its
// commit counted them (activity.go). Never modifies the snapshot's.
func (p *SporePlan) Activity(now time.Time) []state.HourActivity {
	if p.Ingest == nil || len(p.Ingest.events) == 0 {
		return p.Spore.Activity
	}
	return addActivity(p.Spore.Activity, p.Ingest.events, now, p.Ingest.countOf)
}
