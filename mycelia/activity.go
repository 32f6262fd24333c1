package mycelia

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/incident"
	"github.com/sporectl/sporectl/state"
)

// Collisions, deploys and reports (docs/mycologists.md): what the spores
// in a mycologist's reach did, derived from the tool calls ingested into
// the store (so a sleeping spore counts too) and from the reports spores
// write into their own logs. Nothing here asks a bridge; the derivation
// itself is package incident's, shared with reconcile's summons.

// Bounds of an activity scan (package incident owns them).
const (
	DefaultWindow = incident.DefaultWindow
	MaxWindow     = incident.MaxWindow
	ScanPage      = incident.ScanPage
	MaxScanEvents = incident.MaxScanEvents
)

// Report kinds and the actions of their events.
const (
	ReportPush         = incident.ReportPush
	ReportDeploy       = incident.ReportDeploy
	ReportActionPrefix = incident.ReportActionPrefix
)

// ReportRequest is the body of POST /api/mycologist/report.
type ReportRequest struct {
	// Kind is "push" or "deploy".
	Kind   string `json:"kind"`
	Failed bool   `json:"failed,omitempty"`
	Text   string `json:"text"`
}

// ReportResponse answers it (201).
type ReportResponse struct {
	Spore  string `json:"spore"`
	Seq    uint64 `json:"seq"`
	Action string `json:"action"`
	// Summons says what a failed report did: SummonsRaised, or
	// SummonsHeld (the reporter is over its limit of summonses,
	// reconcile.SummonsLimit: the next one counts it); "" for none (not
	// failed, no [arch], the [arch]'s own, or raised before).
	Summons string `json:"summons,omitempty"`
}

// What a failed report did (ReportResponse.Summons).
const (
	SummonsRaised = "raised"
	SummonsHeld   = "held"
)

// Collision, FileEdit and Deploy are derived by package incident.
type (
	Collision = incident.Collision
	FileEdit  = incident.FileEdit
	Deploy    = incident.Deploy
)

// CollisionList answers GET /api/mycologist/collisions.
type CollisionList struct {
	Since time.Time   `json:"since"`
	Files []Collision `json:"files"`
	// Cut names the spores whose scan stopped at MaxScanEvents before
	// reaching Since.
	Cut []string `json:"cut,omitempty"`
}

// DeployList answers GET /api/mycologist/deploys.
type DeployList struct {
	Since   time.Time `json:"since"`
	Deploys []Deploy  `json:"deploys"`
	Cut     []string  `json:"cut,omitempty"`
}

// window reads ?window= (a Go duration, up to MaxWindow).
func window(c *call) (time.Duration, error) {
	v, ok := c.r.URL.Query()["window"]
	if !ok {
		return DefaultWindow, nil
	}
	d, err := time.ParseDuration(strings.Join(v, ","))
	if err != nil || d <= 0 || d > MaxWindow {
		return 0, errorf(http.StatusBadRequest, CodeBadRequest, "window must be a duration such as 24h, more than 0 and at most %s", MaxWindow)
	}
	return d, nil
}

// scanBound is MaxScanEvents (tests lower it).
var scanBound = MaxScanEvents

// scanReach calls fn with the recent events of every spore in the
// caller's reach, in one read-only transaction.
func (s *Server) scanReach(c *call, since time.Time, fn func(sp state.Spore, evs []state.Event)) (cut []string, err error) {
	err = s.Store.View(c.ctx(), func(tx state.Tx) error {
		all, err := tx.Spores(c.ctx())
		if err != nil {
			return err
		}
		for _, sp := range InReach(c.caller, all) {
			evs, wasCut, err := incident.RecentEvents(c.ctx(), tx, sp.ID, since, scanBound)
			if err != nil {
				return err
			}
			if wasCut {
				cut = append(cut, sp.ID)
			}
			fn(sp, evs)
		}
		return nil
	})
	return cut, err
}

// collisions: GET /api/mycologist/collisions?window=D — files that
// several spores in reach edited in the window.
func (s *Server) collisions(c *call) (int, any, error) {
	win, err := window(c)
	if err != nil {
		return 0, nil, err
	}
	since := s.now().Add(-win)
	edits := incident.NewEdits()
	cut, err := s.scanReach(c, since, func(sp state.Spore, evs []state.Event) { edits.Add(sp.ID, evs) })
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, CollisionList{Since: since, Files: edits.Collisions(), Cut: cut}, nil
}

// deploys: GET /api/mycologist/deploys?window=D — pushes and deploys of
// the spores in reach, from Bash calls and reports.
func (s *Server) deploys(c *call) (int, any, error) {
	win, err := window(c)
	if err != nil {
		return 0, nil, err
	}
	since := s.now().Add(-win)
	res := DeployList{Since: since, Deploys: []Deploy{}}
	res.Cut, err = s.scanReach(c, since, func(sp state.Spore, evs []state.Event) {
		res.Deploys = append(res.Deploys, incident.Deploys(sp.ID, evs)...)
	})
	if err != nil {
		return 0, nil, err
	}
	incident.SortDeploys(res.Deploys)
	return http.StatusOK, res, nil
}

// report: POST /api/mycologist/report — a spore says it pushed or
// deployed (or failed to), as a lifecycle event in its own log.
func (s *Server) report(c *call) (int, any, error) {
	var req ReportRequest
	err := decodeBody(c.w, c.r, &req)
	if err != nil {
		return 0, nil, err
	}
	if req.Kind != ReportPush && req.Kind != ReportDeploy {
		return 0, nil, errorf(http.StatusBadRequest, CodeBadRequest, "kind must be %q or %q", ReportPush, ReportDeploy)
	}
	if err := checkText("text", req.Text); err != nil {
		return 0, nil, err
	}
	action := incident.ReportAction(req.Kind, req.Failed)
	var seq uint64
	var summons reconcile.Summoned
	err = s.Store.Update(c.ctx(), func(tx state.Tx) error {
		now := s.now()
		evs, err := tx.Append(c.ctx(), c.caller.ID, []state.Event{{Kind: state.KindLifecycle, Action: action, From: From(c.caller), At: now, Text: req.Text}})
		if err != nil || len(evs) != 1 {
			return err
		}
		seq = evs[0].Seq
		if !req.Failed {
			return nil
		}
		// A failed push or deploy summons the [arch], in the same
		// transaction: raised once, with the report, unless the reporter
		// is over its limit of summonses; the report is recorded either
		// way, since it is the reporter's fact (reconcile/summons.go).
		d := incident.Deploy{Spore: c.caller.ID, At: evs[0].At, Seq: seq, Kind: req.Kind, Source: incident.SourceReport, Failed: true, What: req.Text}
		summons, err = reconcile.SummonReport(c.ctx(), tx, d, now)
		return err
	})
	if err != nil {
		return 0, nil, fmt.Errorf("record the report of %s: %w", c.caller.ID, err)
	}
	res := ReportResponse{Spore: c.caller.ID, Seq: seq, Action: action}
	switch {
	case len(summons.Entries) > 0:
		res.Summons = SummonsRaised
	case len(summons.Held) > 0:
		res.Summons = SummonsHeld
	}
	for _, e := range summons.Entries {
		// Recorded: delivering now is a courtesy, the next pass does it
		// otherwise.
		if _, err := s.Pass.Deliver(c.ctx(), e, false, 0); err != nil {
			s.logger().Warn("deliver the summons now failed; left in the outbox", "message", e.ID, "spore", e.Spore, "err", err)
		}
	}
	return http.StatusCreated, res, nil
}
