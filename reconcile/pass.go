package reconcile

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

// Pass is the one pipeline every command that touches spores runs
// (docs/architecture.md "The pass"):
//
//	load → (upkeep shown) → observe → ingest → plan → record what was decided → act → commit → project
//
// It holds dependencies only; every Run starts from the store.
type Pass struct {
	Store state.Store
	// Runtime builds the runtime the store's settings name. When it
	// fails every spore is observed Unknown and nothing is acted on.
	Runtime func(ctx context.Context, s state.Settings) (Runtime, error)
	// Identity is what a spore's agent is told of itself when the pass
	// starts it (Launch.Identity); nil tells it nothing (an empty text).
	// The CLI sets mycelia.Identity: the text describes the pod-facing
	// API, which the pass must not import.
	Identity func(state.Spore) string
	// Dial reaches a bridge (default DialHTTP).
	Dial Dialer
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Project writes views after the commit; nil for none.
	Project Projector
	Logger  *slog.Logger
	// ObserveDeadline and IngestDeadline bound those steps for the whole
	// fleet (defaults DefaultObserveDeadline, DefaultIngestDeadline).
	ObserveDeadline time.Duration
	IngestDeadline  time.Duration
	// Progress, when set, hears of each step's end with the number of
	// spores the pass covers (the CLI prints it for large fleets on a
	// terminal).
	Progress func(step string, spores int, detail string)
	// Finished, when set, hears of every Run as it returns: its options,
	// its outcome (nil when it failed before it had one), how long it
	// took and its error. serve counts its passes, deliveries and breaker
	// opens with it (reconcile/metrics); it must not block.
	Finished func(opt Options, out *Outcome, took time.Duration, err error)
}

// Projector writes views from a pass's result. full says the result
// covers the whole fleet. Its errors say what it was writing: the pass
// returns them as they are.
type Projector interface {
	Project(ctx context.Context, st state.Store, res Result, full bool) error
}

// Options say which steps a command runs and for which spores.
type Options struct {
	// IDs limit the pass to these spores (all when empty). A named id that
	// is not in the store is reported in Outcome.Missing.
	IDs []string
	// Heal starts dead spores and stops what should not run; Deliver
	// posts the outbox. Without either, the pass never acts: it still
	// ingests and commits what it learned (read-only commands).
	Heal, Deliver bool
	// Force names spores to start now whatever their backoff (wake).
	Force []string
	// DryRun plans and stops: nothing is acted on or written.
	DryRun bool
	// Project writes views (reconcile).
	Project bool
	// Looked is a look at the whole fleet this command made a moment
	// ago (a streamed pass that found something to record: Streamed.Fleet),
	// taken instead of looking again; ignored by a pass over named spores.
	Looked *FleetObservation
}

// Outcome is what a Run saw, decided and did.
type Outcome struct {
	Result
	Plans []*SporePlan
	// Missing joins named ids that are not in the store (ErrNotFound).
	Missing error
	// ObserveErr is set when the runtime could not be observed: every
	// spore is then Unknown and Suspect, and nothing was acted on.
	ObserveErr error
	// Counted: the model gateway is on (state.Settings.Gateway), so what
	// the spores spent is its count (state.GatewayRecord), not their
	// agents' reports (docs/budgets.md "What is counted").
	Counted bool
}

// Run runs one pass. Independent failures (one spore's start, one
// bridge's delivery) are recorded in the plans and the pass goes on; the
// error is for a step that failed as a whole (the store).
func (ps *Pass) Run(ctx context.Context, opt Options) (*Outcome, error) {
	return ps.runOn(ctx, opt, nil)
}

// runOn is Run from snap when the caller read it already (Deliver's
// first pass, from the send's transaction: LoadIn); nil loads it.
func (ps *Pass) runOn(ctx context.Context, opt Options, snap *Snapshot) (*Outcome, error) {
	if ps.Finished == nil {
		return ps.run(ctx, opt, snap)
	}
	start := time.Now()
	out, err := ps.run(ctx, opt, snap)
	ps.Finished(opt, out, time.Since(start), err)
	return out, err
}

func (ps *Pass) run(ctx context.Context, opt Options, snap *Snapshot) (*Outcome, error) {
	now := ps.now()
	if snap == nil {
		var err error
		if snap, err = Load(ctx, ps.Store, opt.IDs); err != nil {
			return nil, err
		}
	}
	out := &Outcome{Missing: snap.ErrMissing(), Counted: snap.Settings.Gateway()}
	n := len(snap.Spores)
	ps.progress("load", n, "")
	// Shown on the snapshot now, recorded before act (recordDecisions).
	up := ps.upkeep(snap, opt, now)
	var slots []*slotted
	slots, up = dueSlots(snap, opt, now, up)
	recovery := snap.Settings.Recovery.WithDefaults()

	obs := observation{spores: map[string]Observed{}}
	rt, err := ps.Runtime(ctx, snap.Settings)
	if err == nil {
		obs, err = observe(ctx, rt, ps.dial(), opt.Looked, snap.Known, snap.IDs(), snap.Named, orDefault(ps.ObserveDeadline, DefaultObserveDeadline))
	}
	for _, id := range snap.IDs() {
		if o := obs.spores[id]; o.BridgeErr != nil {
			// -v says which: not answering, refused on the way, no endpoint.
			ps.logger().Info("bridge not up", "spore", id, "reason", o.BridgeProblem, "err", o.BridgeErr)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			// Interrupted, not a runtime that could not be observed.
			return nil, ctx.Err()
		}
		out.ObserveErr = err
		obs = observation{spores: map[string]Observed{}}
		for _, id := range snap.IDs() {
			obs.spores[id] = observationFailed()
		}
	}

	ps.progress("observe", n, fmt.Sprintf("%d bridge(s) answered", len(obs.clients)))
	damage := snap.damage()
	obs.quarantine(damage)
	var got map[string]*ingested
	if !opt.DryRun {
		known, found, err := lastLines(ctx, ps.Store, snap.Spores, obs)
		if err != nil {
			return nil, fmt.Errorf("read the last ingested lines: %w", err)
		}
		for id, c := range found {
			damage[id] = damageText(c)
		}
		obs.quarantine(damage)
		for id, text := range damage {
			ps.logger().Info("spore's stored data is damaged: judged alone", "spore", id, "damage", text)
		}
		got = ingest(ctx, snap.Spores, snap.Settings, now, obs, known, orDefault(ps.IngestDeadline, DefaultIngestDeadline))
		for id, in := range got {
			if in.problem != "" {
				o := obs.spores[id]
				o.Ingest = in.problem
				o.display()
				obs.spores[id] = o
			}
			if in.err != nil {
				ps.logger().Info("ingest failed", "spore", id, "err", in.err)
			}
		}
	}

	force := map[string]bool{}
	for _, id := range opt.Force {
		force[id] = true
	}
	active := map[string]bool{}
	for id, in := range got {
		if len(in.events) > 0 {
			active[id] = true
		}
	}
	pin := PlanInput{
		Now: now, Policy: recovery, Spores: snap.Spores, Observed: obs.spores, Pending: snap.Pending,
		// Acting on a fleet nobody could observe would be acting blind.
		Heal: opt.Heal && out.ObserveErr == nil, Deliver: opt.Deliver && out.ObserveErr == nil,
		Force: force, Settings: snap.Settings, Active: active, Spends: countSpends(snap, got, now),
		Unreadable: snap.Damaged,
	}
	plans := Plan(pin)
	for _, p := range plans {
		p.Ingest = got[p.Spore.ID]
	}
	out.Plans = plans
	if opt.DryRun || out.ObserveErr != nil {
		// A dry run writes nothing; nor does a pass that could observe
		// nothing: "Suspect, observation failed" is no fact about a spore
		// to record (it would make the next start count as a crash). The
		// upkeep due is still recorded, for the next pass to act on (the
		// plan of a pass that acts on nothing has no sleeps to record).
		if !opt.DryRun {
			if err := ps.recordDecisions(ctx, snap, up, slots, plans, pin); err != nil {
				return nil, err
			}
		}
		out.Result = result(snap, plans, nil, pin.Spends)
		nextRuns(&out.Result, snap, now)
		out.Orphans = orphansOf(opt, obs)
		return out, nil
	}
	if got != nil {
		lines := 0
		for _, in := range got {
			lines += len(in.events)
		}
		ps.progress("ingest", n, fmt.Sprintf("%d line(s)", lines))
	}
	// What act carries out is recorded first, in one transaction: the
	// upkeep, idle sleeps, the budget's sleeps and wakes (decided.go).
	if err := ps.recordDecisions(ctx, snap, up, slots, plans, pin); err != nil {
		return nil, err
	}
	if err := ps.act(ctx, rt, plans, obs); err != nil {
		return nil, err
	}
	ps.progress("act", n, "")
	// The incidents the ingested lines made are raised once each, in the
	// transaction that appends the lines (summons.go).
	var raised []state.OutboxEntry
	last, err := ps.commit(ctx, plans, now, func(ctx context.Context, tx state.Tx) (err error) {
		raised, err = ps.summon(ctx, tx, snap, got, now)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("commit the pass: %w", err)
	}
	for _, e := range raised {
		ps.logger().Info("summons raised", "spore", e.Spore, "message", e.ID)
	}
	ps.progress("commit", n, "")
	out.Result = result(snap, plans, last, pin.Spends)
	nextRuns(&out.Result, snap, now)
	out.Orphans = orphansOf(opt, obs)
	if opt.Project && ps.Project != nil {
		if err := ps.Project.Project(ctx, ps.Store, out.Result, len(opt.IDs) == 0); err != nil {
			// The projector's errors name what it was writing ("project
			// views: …", "put views: …"); a prefix here would say it twice.
			return out, err
		}
	}
	return out, nil
}

// result is the pass's view of each spore after the commit.
func result(snap *Snapshot, plans []*SporePlan, last map[string]uint64, spends policy.Spends) Result {
	var r Result
	r.Spores = make([]SporeHealth, 0, len(plans))
	for _, p := range plans {
		id := p.Spore.ID
		lastSeq, ok := last[id]
		if !ok {
			lastSeq = snap.Heads[id].LastSeq
		}
		r.Spores = append(r.Spores, sporeHealth(p, lastSeq, snap.Pending[id], snap.Dead[id], snap.Settings, spends))
	}
	return r
}

// sporeHealth is one spore's row of the result: p as planned and acted
// on, lastSeq its log's last event after the commit, pending its outbox
// as the snapshot read it, dead its dead letters before the pass.
func sporeHealth(p *SporePlan, lastSeq uint64, pending []state.OutboxEntry, dead int, settings state.Settings, spends policy.Spends) SporeHealth {
	sp := &p.Spore
	var n int
	var since time.Time
	dead += p.buried()
	for _, e := range pending {
		if !p.delivered(e.ID) && !p.isBuried(e.ID) {
			if n == 0 {
				since = e.At
			}
			n++
		}
	}
	v := p.Verdict
	if p.OpenBreaker {
		// Committed in this pass: the spore is Error from now on.
		v = Health(sp.Desired, p.Observed, true)
	}
	h := SporeHealth{
		ID: sp.ID, Colony: sp.Colony, Rank: sp.Rank, Swarm: sp.Swarm, Role: sp.Role, Desired: sp.Desired,
		Observed: p.Observed, Effective: v.Effective, Reason: v.Text, Code: v.Code,
		LastSeq: lastSeq, Pending: n, PendingSince: since, Held: held(pending, p.OverBudget),
		Image: sp.Spec.Image, Created: sp.Created,
	}
	h.SleptBy, h.Reason = sleptBy(*sp, settings, v, p.OverText)
	if s, ok := spends.Spore[sp.ID]; ok {
		b := sp.Budget
		h.Spend, h.Budget, h.OverBudget = &s, &b, p.OverText
		if r, ok := spends.Reported[sp.ID]; ok {
			h.ReportedSpend = &r
		}
		if h.Reason == "" && p.OverBudget {
			h.Reason = "over budget (" + p.OverText + ")"
		}
	}
	if h.DeadLetters = dead; dead > 0 && h.Reason == "" {
		// Healthy, but not plainly: something sent to it never will be.
		h.Reason = deadLettersText(sp.ID, dead)
	}
	return h
}

// delivered reports whether this pass delivered entry id (a pass
// delivers a few entries at most: a scan, not a map per spore).
func (p *SporePlan) delivered(id string) bool {
	for _, d := range p.Delivered {
		if d.Err == nil && d.Entry.ID == id {
			return true
		}
	}
	return false
}

// buried counts the entries this pass found refused for good (the
// commit made them dead letters, unless an overlapping pass had).
func (p *SporePlan) buried() int {
	n := 0
	for _, d := range p.Delivered {
		if d.Dead != "" {
			n++
		}
	}
	return n
}

// isBuried reports whether this pass found entry id refused for good.
func (p *SporePlan) isBuried(id string) bool {
	for _, d := range p.Delivered {
		if d.Dead != "" && d.Entry.ID == id {
			return true
		}
	}
	return false
}

// deadLettersText is the status reason of a spore with n dead letters
// and nothing worse to say.
func deadLettersText(id string, n int) string {
	if n == 1 {
		return "1 dead letter in its outbox (sporectl outbox " + id + ")"
	}
	return fmt.Sprintf("%d dead letters in its outbox (sporectl outbox %s)", n, id)
}

// orphansOf are the observation's orphans when the pass covered the whole
// fleet: only then can an orphan be told from a spore it was not asked
// about.
func orphansOf(opt Options, obs observation) []string {
	if len(opt.IDs) > 0 {
		return nil
	}
	return obs.orphans
}

func (ps *Pass) progress(step string, n int, detail string) {
	if ps.Progress != nil {
		ps.Progress(step, n, detail)
	}
}

func (ps *Pass) now() time.Time {
	if ps.Now != nil {
		return ps.Now().UTC()
	}
	return time.Now().UTC()
}

func (ps *Pass) dial() Dialer {
	if ps.Dial != nil {
		return ps.Dial
	}
	return DialHTTP
}

func (ps *Pass) logger() *slog.Logger {
	if ps.Logger != nil {
		return ps.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
