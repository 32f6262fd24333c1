package reconcile

import "github.com/sporectl/sporectl/internal/digest"

// AddTo adds every field of h to d but the bridge's error, whose text
// may change with nothing else: what a view or a page made from h is
// made from, so that equal digests say it would be made the same
// (TestHealthDigestHasEveryField).
func (h *SporeHealth) AddTo(d *digest.Digest) {
	d.Str(h.ID)
	d.Str(h.Colony)
	d.Str(string(h.Rank))
	d.Str(h.Swarm)
	d.Str(h.Role)
	d.Str(string(h.Desired))
	o := &h.Observed
	d.Str(string(o.Pod))
	d.Str(string(o.Bridge))
	d.Str(string(o.Activity))
	d.Int(int64(o.Restarts))
	d.Str(string(o.Reason))
	d.Str(o.Message)
	d.Str(o.AgentError)
	d.Int(int64(o.Pods))
	d.Str(string(o.LastTermination))
	d.Bool(o.Exited)
	d.Str(string(o.BridgeProblem))
	d.Str(o.Breach)
	d.Uint(o.BridgeLastSeq)
	d.Int(int64(o.Queue))
	d.Str(o.SessionID)
	d.Str(string(o.Ingest))
	d.Bool(o.Unknown)
	d.Str(o.Damage)
	d.Str(string(h.Effective))
	d.Str(h.Reason)
	d.Str(string(h.Code))
	d.Str(h.SleptBy)
	d.Bool(h.Spend != nil)
	if h.Spend != nil {
		d.Int(h.Spend.Tokens)
		d.Int(h.Spend.CostMicros)
	}
	d.Bool(h.ReportedSpend != nil)
	if h.ReportedSpend != nil {
		d.Int(h.ReportedSpend.Tokens)
		d.Int(h.ReportedSpend.CostMicros)
	}
	d.Bool(h.Budget != nil)
	if h.Budget != nil {
		d.Int(h.Budget.TokensPerDay)
		d.Int(h.Budget.CostPerDayMicros)
	}
	d.Str(h.OverBudget)
	d.Uint(h.LastSeq)
	d.Int(int64(h.Pending))
	d.Time(h.PendingSince)
	d.Int(int64(h.Held))
	d.Int(int64(h.DeadLetters))
	d.Str(h.Image)
	d.Time(h.Created)
	d.Bool(h.NextSchedule != nil)
	if h.NextSchedule != nil {
		d.Time(*h.NextSchedule)
	}
}
