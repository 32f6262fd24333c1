package cli

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/reconcile/transcript"
	"github.com/sporectl/sporectl/state"
)

// describeInput is what describe knows of one spore: what the pass
// concluded, its plan (the record as read), the settings and its events.
type describeInput struct {
	health     reconcile.SporeHealth
	plan       *reconcile.SporePlan // nil only if the pass made none
	tail       eventTail
	settings   state.Settings
	now        time.Time
	counted    bool
	observeErr error
}

// describeList is `describe -o json|yaml`: one document per spore, in
// id order (docs/cli.md "describe").
type describeList struct {
	Spores []sporeDescription `json:"spores"`
	now    time.Time
}

// sporeDescription is everything describe shows of one spore.
type sporeDescription struct {
	Name string `json:"name"`
	// Wish is nil when the spore's record could not be read (its status
	// then says why).
	Wish     *describeWish    `json:"wish"`
	Status   describeStatus   `json:"status"`
	Observed describeObserved `json:"observed"`
	Spend    describeSpend    `json:"spend_today"`
	Outbox   describeOutbox   `json:"outbox"`
	// NextSchedule is the spore's next scheduled prompt; nil: none.
	NextSchedule *describeSchedule `json:"next_schedule"`
	// Events are its last --events events, oldest first; EventsError
	// says why they could not be read.
	Events      []state.Event `json:"events"`
	EventsError string        `json:"events_error,omitempty"`
}

type describeWish struct {
	Colony     string            `json:"colony"`
	Rank       state.Rank        `json:"rank"`
	Swarm      string            `json:"swarm,omitempty"`
	Role       string            `json:"role,omitempty"`
	Labels     map[string]string `json:"labels,omitempty"`
	Desired    state.Desired     `json:"desired"`
	DesiredBy  state.DesiredBy   `json:"desired_by,omitempty"`
	Generation uint64            `json:"generation"`
	// Budget is the spore's own; ColonyBudget its colony's, all its
	// spores together.
	Budget       state.Budget `json:"budget"`
	ColonyBudget state.Budget `json:"colony_budget"`
	// SleepAfter is the spore's own (0: its colony's); SleepAfterApplied
	// what applies to it (0: never).
	SleepAfter        state.Duration `json:"sleep_after"`
	SleepAfterApplied state.Duration `json:"sleep_after_applied"`
	Loop              state.Duration `json:"loop,omitzero"`
	Spec              state.Spec     `json:"spec"`
	Created           time.Time      `json:"created"`
	Updated           time.Time      `json:"updated"`
}

type describeStatus struct {
	Effective policy.Health    `json:"effective"`
	Reason    string           `json:"reason"`
	Code      reconcile.Reason `json:"code,omitempty"`
	SleptBy   string           `json:"slept_by,omitempty"`
	Restarts  int              `json:"restarts"`
	// RecentCrashes are the crashes inside the breaker's window.
	RecentCrashes int  `json:"recent_crashes"`
	BreakerOpen   bool `json:"breaker_open"`
	// NextRetry is the earliest time of the next respawn after a crash
	// (zero: no backoff waits).
	NextRetry          time.Time `json:"next_retry,omitzero"`
	ObservedGeneration uint64    `json:"observed_generation"`
	LastSeq            uint64    `json:"last_seq"`
}

type describeObserved struct {
	reconcile.Observed
	// IdleSince is when it was last seen working (or its wish last
	// changed), as idle sleep reads it; zero when unknown.
	IdleSince time.Time `json:"idle_since,omitzero"`
	// Error is why the runtime could not be observed, if it could not.
	Error string `json:"error,omitempty"`
}

type describeSpend struct {
	// Spend is what budgets judge; ReportedSpend, with the model gateway
	// on, what the agent itself reported (docs/budgets.md).
	Spend         state.Spend  `json:"spend"`
	ReportedSpend *state.Spend `json:"reported_spend,omitempty"`
	OverBudget    string       `json:"over_budget,omitempty"`
}

type describeOutbox struct {
	Queued       int       `json:"queued"`
	Held         int       `json:"held"`
	OldestQueued time.Time `json:"oldest_queued,omitzero"`
	DeadLetters  int       `json:"dead_letters"`
}

// describeSchedule is a spore's next scheduled prompt.
type describeSchedule struct {
	Name string    `json:"name"`
	At   time.Time `json:"at"`
}

// nextSchedule is the next slot of a schedule that prompts this spore,
// nil when none. describe reads the named spore alone, so a SWARM/ROLE
// target is resolved against it only (as `status ID` does): a role two
// spores share shows here though the pass would skip it as ambiguous.
func nextSchedule(in describeInput) *describeSchedule {
	if in.plan == nil {
		return nil
	}
	runs := reconcile.NextRuns(in.settings, []state.Spore{in.plan.Spore}, in.health.ID, in.now)
	if len(runs) == 0 {
		return nil
	}
	return &describeSchedule{Name: runs[0].Name, At: runs[0].Next}
}

// describeSpore gathers in into one description.
func describeSpore(in describeInput) sporeDescription {
	h := in.health
	d := sporeDescription{Name: h.ID, Events: in.tail.events}
	if d.Events == nil {
		d.Events = []state.Event{}
	}
	if in.tail.err != nil {
		d.EventsError = in.tail.err.Error()
	}
	var sp state.Spore
	readable := in.plan != nil && !in.plan.Unreadable
	if readable {
		sp = in.plan.Spore
		d.Wish = &describeWish{
			Colony: sp.Colony, Rank: sp.Rank, Swarm: sp.Swarm, Role: sp.Role, Desired: sp.Desired, DesiredBy: sp.DesiredBy,
			Generation: sp.Generation, Budget: sp.Budget, ColonyBudget: in.settings.Colony(sp.Colony).Budget,
			SleepAfter: sp.SleepAfter, SleepAfterApplied: state.Duration(policy.SleepAfter(sp, in.settings)),
			Loop: sp.Loop, Spec: sp.Spec, Created: sp.Created, Updated: sp.Updated,
		}
		if sp.Spec.Pod != nil {
			d.Wish.Labels = sp.Spec.Pod.Labels
		}
		pol := in.settings.Recovery.WithDefaults()
		// RecentFailures counts now as the crash it is asked about: not one here.
		d.Status.RecentCrashes = len(policy.RecentFailures(sp.Failures, in.now, time.Duration(pol.BreakerWindow))) - 1
		d.Status.BreakerOpen = sp.BreakerOpen
		if sp.NotBefore.After(in.now) {
			d.Status.NextRetry = sp.NotBefore
		}
		d.Status.ObservedGeneration = sp.ObservedGeneration
		d.Observed.IdleSince = policy.IdleSince(sp)
		d.NextSchedule = nextSchedule(in)
	}
	d.Status.Effective, d.Status.Reason, d.Status.Code, d.Status.SleptBy = h.Effective, h.Reason, h.Code, h.SleptBy
	d.Status.Restarts, d.Status.LastSeq = sp.Restarts, h.LastSeq
	d.Observed.Observed = h.Observed
	if in.observeErr != nil {
		d.Observed.Error = in.observeErr.Error()
	}
	switch {
	case h.Spend != nil:
		d.Spend.Spend = *h.Spend
	case readable:
		d.Spend.Spend = policy.SpendOf(sp, in.settings, in.now, state.Spend{})
	}
	switch {
	case h.ReportedSpend != nil:
		d.Spend.ReportedSpend = h.ReportedSpend
	case readable && in.counted:
		r := policy.ReportedSpend(sp, in.now, state.Spend{})
		d.Spend.ReportedSpend = &r
	}
	d.Spend.OverBudget = h.OverBudget
	d.Outbox = describeOutbox{Queued: h.Pending, Held: h.Held, OldestQueued: h.PendingSince, DeadLetters: h.DeadLetters}
	return d
}

func (l describeList) Names() []string {
	out := make([]string, len(l.Spores))
	for i, s := range l.Spores {
		out[i] = "spore/" + s.Name
	}
	return out
}

// Table is never printed (Lines is); it is the Printable's other form.
func (l describeList) Table(bool) ([]string, [][]string) {
	rows := make([][]string, len(l.Spores))
	for i, s := range l.Spores {
		rows[i] = []string{s.Name, string(s.Status.Effective)}
	}
	return []string{"ID", "EFFECTIVE"}, rows
}

// Lines is kubectl describe's shape: aligned "Key:  value" blocks, the
// spores separated by a blank line.
func (l describeList) Lines() []string {
	var out []string
	for i, s := range l.Spores {
		if i > 0 {
			out = append(out, "")
		}
		out = append(out, s.lines(l.now)...)
	}
	return out
}

// field is one "Key: value" line of a description, indented by level
// blocks; a block's title is a field with no value.
type field struct {
	level int
	key   string
	value string
	title bool
}

func (s sporeDescription) lines(now time.Time) []string {
	var fs []field
	add := func(level int, key, value string) { fs = append(fs, field{level: level, key: key, value: value}) }
	block := func(key string) { fs = append(fs, field{key: key, title: true}) }

	add(0, "Name", s.Name)
	if w := s.Wish; w != nil {
		add(0, "Colony", w.Colony)
		add(0, "Rank", string(w.Rank))
		swarm := "<none>"
		if w.Swarm != "" {
			swarm = w.Swarm + " (role " + noneIfEmpty(w.Role) + ")"
		}
		add(0, "Swarm", swarm)
		add(0, "Labels", mapText(w.Labels))
		add(0, "Created", when(w.Created, now))
		block("Wish")
		desired := string(w.Desired)
		if w.Desired == state.Paused {
			desired += " (by " + byText(w.DesiredBy) + ")"
		}
		add(1, "Desired", desired)
		add(1, "Generation", fmt.Sprintf("%d (observed %d)", w.Generation, s.Status.ObservedGeneration))
		add(1, "Updated", when(w.Updated, now))
		add(1, "Budget", w.Budget.Text()+" (own); colony's: "+w.ColonyBudget.Text())
		add(1, "Sleep after", sleepAfterText(w))
		if w.Loop != 0 {
			add(1, "Loop", w.Loop.String())
		}
		add(1, "Image", noneIfEmpty(w.Spec.Image))
		add(1, "Resources", fmt.Sprintf("cpu %s, memory %s, storage %s", noneIfEmpty(w.Spec.CPU), noneIfEmpty(w.Spec.Memory), noneIfEmpty(w.Spec.Storage)))
		add(1, "Pod options", w.Spec.Pod.Summary())
	} else {
		add(0, "Wish", "<unreadable: see the reason>")
	}

	block("Status")
	add(1, "Effective", string(s.Status.Effective))
	add(1, "Reason", noneIfEmpty(s.Status.Reason))
	if s.Status.SleptBy != "" {
		add(1, "Slept by", s.Status.SleptBy)
	}
	add(1, "Restarts", strconv.Itoa(s.Status.Restarts))
	breaker := fmt.Sprintf("closed (%d recent crash(es))", s.Status.RecentCrashes)
	if s.Status.BreakerOpen {
		breaker = fmt.Sprintf("open (%d recent crash(es); sporectl reset closes it)", s.Status.RecentCrashes)
	}
	add(1, "Breaker", breaker)
	backoff := "<none>"
	if !s.Status.NextRetry.IsZero() {
		backoff = "next retry " + when(s.Status.NextRetry, now)
	}
	add(1, "Backoff", backoff)
	add(1, "Last seq", strconv.FormatUint(s.Status.LastSeq, 10))

	block("Observed")
	o := s.Observed
	add(1, "Process/pod", fmt.Sprintf("%s (%d found)", noneIfEmpty(string(o.Pod)), o.Pods))
	add(1, "Bridge", noneIfEmpty(string(o.Bridge)))
	activity := noneIfEmpty(string(o.Activity))
	if o.Activity == "idle" && !o.IdleSince.IsZero() {
		activity += " since " + when(o.IdleSince, now)
	}
	add(1, "Activity", activity)
	if o.Reason != "" {
		add(1, "Reason", string(o.Reason))
	}
	if o.Message != "" {
		add(1, "Message", o.Message)
	}
	if o.Error != "" {
		add(1, "Error", o.Error)
	}

	block("Spend today")
	add(1, "Judged", s.Spend.Spend.Text())
	if s.Spend.ReportedSpend != nil {
		add(1, "Reported", s.Spend.ReportedSpend.Text()+" (the agent's own account, not judged)")
	}
	add(1, "Over budget", noneIfEmpty(s.Spend.OverBudget))

	block("Outbox")
	queued := strconv.Itoa(s.Outbox.Queued)
	if !s.Outbox.OldestQueued.IsZero() {
		queued += " (oldest queued " + when(s.Outbox.OldestQueued, now) + ")"
	}
	add(1, "Queued", queued)
	add(1, "Held", strconv.Itoa(s.Outbox.Held))
	add(1, "Dead letters", strconv.Itoa(s.Outbox.DeadLetters))

	next := "<none>"
	if n := s.NextSchedule; n != nil {
		next = n.Name + " " + when(n.At, now)
	}
	add(0, "Next schedule", next)

	lines := alignFields(fs)
	return append(lines, s.eventLines()...)
}

// alignFields writes each field as "Key:" padded so that every value of
// the description starts in one column, as kubectl describe's do.
func alignFields(fs []field) []string {
	width := 0
	for _, f := range fs {
		if !f.title {
			width = max(width, 2*f.level+len(f.key)+1)
		}
	}
	out := make([]string, 0, len(fs))
	for _, f := range fs {
		head := strings.Repeat("  ", f.level) + f.key + ":"
		if f.title {
			out = append(out, head)
			continue
		}
		out = append(out, head+strings.Repeat(" ", width-len(head)+2)+transcript.Sanitize(f.value))
	}
	return out
}

// eventLines is the Events block: events' table, indented.
func (s sporeDescription) eventLines() []string {
	switch {
	case s.EventsError != "":
		return []string{"Events:  <unreadable: " + transcript.Sanitize(s.EventsError) + ">"}
	case len(s.Events) == 0:
		return []string{"Events:  <none>"}
	}
	header, rows := eventList{Spore: s.Name, Events: s.Events}.Table(false)
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = transcript.Sanitize(c)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	_ = tw.Flush() // a strings.Builder does not fail
	out := []string{"Events:"}
	for _, l := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		out = append(out, "  "+strings.TrimRight(l, " "))
	}
	return out
}

// when is a time as describe prints it: RFC 3339 in UTC, and how long
// ago (or from now) against now.
func when(t, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	d := now.Sub(t)
	rel := shortDuration(d) + " ago"
	if d < 0 {
		rel = "in " + shortDuration(-d)
	}
	return t.UTC().Format(time.RFC3339) + " (" + rel + ")"
}

// shortDuration is d rounded to its largest unit or two: 45s, 3m20s, 5h2m, 3d4h.
func shortDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		d = d.Round(time.Minute)
		return fmt.Sprintf("%dh%dm", int(d.Hours()), int(d.Minutes())%60)
	}
	d = d.Round(time.Hour)
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}

func sleepAfterText(w *describeWish) string {
	switch {
	case w.SleepAfterApplied == 0:
		return "never"
	case w.SleepAfter != 0:
		return w.SleepAfter.String() + " (own)"
	}
	return w.SleepAfterApplied.String() + " (colony's)"
}

func byText(by state.DesiredBy) string {
	if by == state.ByPerson {
		return "a person"
	}
	return string(by)
}

func noneIfEmpty(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// mapText is a map as "k=v, k2=v2" in key order, "<none>" when empty.
func mapText(m map[string]string) string {
	if len(m) == 0 {
		return "<none>"
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, ", ")
}
