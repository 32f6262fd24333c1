package colonyspec

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
)

// Action is what applying does to one spore, in kubectl's words.
type Action string

const (
	Created    Action = "created"
	Configured Action = "configured"
	Unchanged  Action = "unchanged"
	Pruned     Action = "pruned"
)

// Diff is one field that changes: its name in the format and its values
// as stored and as the file has them ("" for none).
type Diff struct {
	Field string `json:"field"`
	From  string `json:"from"`
	To    string `json:"to"`
}

// Change is what applying does to one spore, or (Settings not nil) to
// its colony's settings.
type Change struct {
	Action Action
	ID     string // "" for a colony's settings
	Colony string
	Diffs  []Diff // for Created every field the new spore is given

	// What Apply records; zero values where nothing changes.
	New        *wish.New     // Created
	Spec       *wish.Spec    // Configured: swarm, role or spec differ
	Desired    state.Desired // a desired state other than the stored (for Created: than Paused)
	Loop       *time.Duration
	SleepAfter *time.Duration
	// Settings are the colony's idle-sleep settings as the document
	// leaves them, when they differ from the stored (a colony change).
	Settings *state.ColonySettings
	Budget   *state.Budget // Configured: the budget differs

	where string // "file:line: spec.spores[i]", for the store's errors
}

// Plan is every change of the documents, in their order, the pruned
// spores last (by id).
type Plan struct {
	Changes []Change
}

// Kind is what c changes, as kubectl names objects: "spore" or "colony".
func (c Change) Kind() string {
	if c.ID == "" {
		return "colony"
	}
	return "spore"
}

// Name is the name of what c changes: the spore's id, or the colony's.
func (c Change) Name() string {
	if c.ID == "" {
		return c.Colony
	}
	return c.ID
}

// Changed reports whether applying p writes anything.
func (p Plan) Changed() bool {
	return slices.ContainsFunc(p.Changes, func(c Change) bool { return c.Action != Unchanged })
}

// Prunes are the ids p deletes.
func (p Plan) Prunes() []string {
	var ids []string
	for _, c := range p.Changes {
		if c.Action == Pruned {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// Options say how a plan treats what the documents leave out.
type Options struct {
	// Prune deletes the spores of the documents' colonies that no
	// document lists.
	Prune bool
}

// MakePlan compares docs with the stored spores and settings (the
// colonies' idle-sleep settings). A colony given by two
// documents, a spore listed twice, a spore stored in another colony, a
// rank other than the stored one and a field the spore's rank cannot
// have are errors naming the file, line and field; the plan is then
// empty. The rules that involve other spores (one colony mycologist per
// colony, ...) are checked by Apply, in order, as wish applies them.
func MakePlan(docs []Document, stored []state.Spore, settings state.Settings, opt Options) (Plan, error) {
	byID := make(map[string]state.Spore, len(stored))
	for _, s := range stored {
		byID[s.ID] = s
	}
	var errs []error
	var p Plan
	colonies := map[string]string{} // name → where its document is
	listed := map[string]string{}   // spore id → where
	for di := range docs {
		d := &docs[di]
		name := d.Metadata.Name
		if w, dup := colonies[name]; dup {
			errs = append(errs, d.errorAt("metadata.name", "colony %s is given by two documents (the other at %s)", name, w))
			continue
		}
		colonies[name] = d.where("metadata.name")
		errs = append(errs, d.checkSecrets("spec.pod", d.Spec.Pod, settings)...)
		if c, ok := planColony(d, settings.Colony(name)); ok {
			p.Changes = append(p.Changes, c)
		}
		for i, s := range d.Spec.Spores {
			path := fmt.Sprintf("spec.spores[%d]", i)
			if w, dup := listed[s.ID]; dup {
				errs = append(errs, d.errorAt(path+".id", "spore %s is listed twice (first at %s)", s.ID, w))
				continue
			}
			listed[s.ID] = d.where(path)
			if bad := d.checkSecrets(path+".pod", s.Pod, settings); len(bad) > 0 {
				errs = append(errs, bad...)
				continue
			}
			c, err := plan(d, path, s, name, byID)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			p.Changes = append(p.Changes, c)
		}
	}
	if opt.Prune {
		for _, s := range stored { // by id
			if _, ours := colonies[s.Colony]; ours && listed[s.ID] == "" {
				p.Changes = append(p.Changes, Change{Action: Pruned, ID: s.ID, Colony: s.Colony})
			}
		}
	}
	if len(errs) == 0 {
		errs = checkRanks(p, stored)
	}
	if len(errs) > 0 {
		return Plan{}, errors.Join(errs...)
	}
	return p, nil
}

// checkRanks checks the rank rules (wish.CheckRank) on the spores p
// would leave in the store, for each spore it creates or moves, so that
// diff reports what apply would refuse. Apply checks them again, one
// change at a time, as it records them.
func checkRanks(p Plan, stored []state.Spore) []error {
	final := make(map[string]state.Spore, len(stored))
	for _, s := range stored {
		final[s.ID] = s
	}
	for _, c := range p.Changes {
		switch {
		case c.Settings != nil:
		case c.Action == Pruned:
			delete(final, c.ID)
		case c.New != nil:
			final[c.ID] = state.Spore{Wish: state.Wish{ID: c.ID, Colony: c.Colony, Rank: c.New.Rank, Swarm: c.New.Swarm, Role: c.New.Role}}
		case c.Spec != nil:
			s := final[c.ID]
			s.Swarm, s.Role = c.Spec.Swarm, c.Spec.Role
			final[c.ID] = s
		}
	}
	all := make([]state.Spore, 0, len(final))
	for _, s := range final {
		all = append(all, s)
	}
	var errs []error
	for _, c := range p.Changes {
		if c.New == nil && c.Spec == nil {
			continue
		}
		if err := wish.CheckRank(final[c.ID], all); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.where, err))
		}
	}
	return errs
}

// planColony is the change of a document's colony settings, if any: a
// setting the document leaves out keeps the stored one.
func planColony(d *Document, stored state.ColonySettings) (Change, bool) {
	next := stored
	if v := d.Spec.SleepAfter; v != nil {
		after, _ := parseSleepAfter(*v) // Read checked it
		next.SleepAfter = state.Duration(after)
	}
	if v := d.Spec.WakeOnMessage; v != nil {
		next.WakeOnMessage = *v
	}
	if d.Spec.Budget != nil {
		next.Budget = d.Spec.Budget.budget()
	}
	if d.Spec.Pod != nil {
		next.Pod = d.Spec.Pod.options()
	}
	if v := d.Spec.Egress; v != nil {
		// Stored as "" when it is the default, so a document that says
		// "all" changes nothing on a colony that never set it.
		next.Egress = *v
		if next.Egress == state.EgressAll {
			next.Egress = ""
		}
	}
	if d.Spec.Schedules != nil {
		next.Schedules = schedules(*d.Spec.Schedules, stored.Schedules)
	}
	if next.Equal(stored) {
		return Change{}, false
	}
	c := Change{Action: Configured, Colony: d.Metadata.Name, Settings: &next, where: d.where("spec")}
	c.Diffs = appendDiff(c.Diffs, "sleepAfter", loopText(time.Duration(stored.SleepAfter)), loopText(time.Duration(next.SleepAfter)))
	c.Diffs = appendDiff(c.Diffs, "wakeOnMessage", strconv.FormatBool(stored.WakeOnMessage), strconv.FormatBool(next.WakeOnMessage))
	c.Diffs = appendDiff(c.Diffs, "budget", budgetText(stored.Budget), budgetText(next.Budget))
	c.Diffs = appendDiff(c.Diffs, "egress", egressText(stored.Egress), egressText(next.Egress))
	if !next.Pod.Equal(stored.Pod) {
		c.Diffs = append(c.Diffs, podDiff(stored.Pod, next.Pod))
	}
	c.Diffs = append(c.Diffs, scheduleDiffs(stored.Schedules, next.Schedules)...)
	return c, true
}

// plan is the change of one listed spore.
func plan(d *Document, path string, s Spore, colony string, byID map[string]state.Spore) (Change, error) {
	f := s.merged(d.Spec.Defaults)
	c := Change{ID: s.ID, Colony: colony, where: d.where(path)}
	old, exists := byID[s.ID]
	rank := state.RankSpore
	if exists {
		rank = old.Rank
	}
	if s.Rank != nil {
		if exists && state.Rank(*s.Rank) != old.Rank {
			return c, d.errorAt(path+".rank", "spore %s has rank %s, not %s: a rank is fixed when the spore is created (delete it and create it again to change it)", s.ID, old.Rank, *s.Rank)
		}
		rank = state.Rank(*s.Rank)
	}
	if exists && old.Colony != colony {
		return c, fmt.Errorf("%s: spore %s is in colony %s, not %s: apply does not move a spore between colonies (delete it there first): %w",
			d.where(path+".id"), s.ID, old.Colony, colony, state.ErrExists)
	}
	swarm, role := str(s.Swarm, old.Swarm), str(s.Role, old.Role)
	if !exists {
		swarm, role = str(s.Swarm, ""), str(s.Role, "")
	}
	switch {
	case role != "" && swarm == "":
		return c, d.errorAt(path+".role", "role %s needs a swarm", role)
	case rank == state.RankSwarm && swarm == "":
		return c, d.errorAt(path+".swarm", "a [swarm] mycologist orchestrates one swarm: it needs a swarm")
	}
	// The [arch] is always on: a change to another desired state is
	// refused, as sleep and stop refuse it. The state it is in already
	// (created asleep, not yet woken by a pass) is no change.
	if f.Desired != nil && policy.AlwaysOnRank(rank) && state.Desired(*f.Desired) != state.Running &&
		(exists && state.Desired(*f.Desired) != old.Desired || !exists && state.Desired(*f.Desired) != state.Paused) {
		return c, d.errorAt(path+".desired", "spore %s is the [arch] mycologist, which is always on: want Running, not %s", s.ID, *f.Desired)
	}
	var loop *time.Duration
	if s.Loop != nil {
		l, _ := parseLoop(*s.Loop) // Read checked it
		if l != 0 && rank != state.RankSwarm {
			return c, d.errorAt(path+".loop", "only a [swarm] mycologist (rank swarm) has a loop; spore %s is rank %s", s.ID, rank)
		}
		loop = &l
	}
	var sleepAfter *time.Duration
	if s.SleepAfter != nil {
		a, _ := parseSleepAfter(*s.SleepAfter) // Read checked it
		if a != 0 && policy.AlwaysOnRank(rank) {
			return c, d.errorAt(path+".sleepAfter", "spore %s is the [arch] mycologist, which is always on: it is never put to sleep", s.ID)
		}
		sleepAfter = &a
	}
	var budget *state.Budget
	if f.Budget != nil {
		b := f.Budget.budget()
		if !b.IsZero() && policy.AlwaysOnRank(rank) {
			return c, d.errorAt(path+".budget", "spore %s is the [arch] mycologist, which is always on: no budget holds it back", s.ID)
		}
		budget = &b
	}

	if !exists {
		c.Action = Created
		c.New = &wish.New{ID: s.ID, Colony: colony, Rank: rank, Swarm: swarm, Role: role, Spec: f.spec(state.Spec{})}
		c.New.Spec.Pod = s.Pod.options()
		if sleepAfter != nil {
			c.New.SleepAfter = *sleepAfter
		}
		c.Diffs = append(c.Diffs, Diff{"rank", "", string(rank)})
		c.Diffs = appendDiff(c.Diffs, "swarm", "", swarm)
		c.Diffs = appendDiff(c.Diffs, "role", "", role)
		c.Diffs = appendSpecDiffs(c.Diffs, state.Spec{}, c.New.Spec)
		if c.New.Spec.Pod != nil {
			c.Diffs = append(c.Diffs, podDiff(nil, c.New.Spec.Pod))
		}
		desired := state.Paused
		if f.Desired != nil {
			desired = state.Desired(*f.Desired)
		}
		c.Diffs = append(c.Diffs, Diff{"desired", "", string(desired)})
		if desired != state.Paused {
			c.Desired = desired
		}
		if loop != nil && *loop != 0 {
			c.Loop = loop
			c.Diffs = append(c.Diffs, Diff{"loop", "", loop.String()})
		}
		if sleepAfter != nil && *sleepAfter != 0 {
			c.Diffs = append(c.Diffs, Diff{"sleepAfter", "", sleepAfter.String()})
		}
		if budget != nil && !budget.IsZero() {
			c.New.Budget = *budget
			c.Diffs = append(c.Diffs, Diff{"budget", "", budgetText(*budget)})
		}
		return c, nil
	}

	c.Action = Unchanged
	spec := f.spec(old.Spec)
	if s.Pod != nil {
		spec.Pod = s.Pod.options()
	}
	if swarm != old.Swarm || role != old.Role || !spec.Equal(old.Spec) {
		c.Spec = &wish.Spec{Rank: old.Rank, Swarm: swarm, Role: role, Spec: spec}
		c.Diffs = appendDiff(c.Diffs, "swarm", old.Swarm, swarm)
		c.Diffs = appendDiff(c.Diffs, "role", old.Role, role)
		c.Diffs = appendSpecDiffs(c.Diffs, old.Spec, spec)
		if !spec.Pod.Equal(old.Spec.Pod) {
			c.Diffs = append(c.Diffs, podDiff(old.Spec.Pod, spec.Pod))
		}
	}
	if f.Desired != nil && state.Desired(*f.Desired) != old.Desired {
		c.Desired = state.Desired(*f.Desired)
		c.Diffs = append(c.Diffs, Diff{"desired", string(old.Desired), *f.Desired})
	}
	if loop != nil && *loop != time.Duration(old.Loop) {
		c.Loop = loop
		c.Diffs = append(c.Diffs, Diff{"loop", loopText(time.Duration(old.Loop)), loopText(*loop)})
	}
	if sleepAfter != nil && *sleepAfter != time.Duration(old.SleepAfter) {
		c.SleepAfter = sleepAfter
		c.Diffs = append(c.Diffs, Diff{"sleepAfter", loopText(time.Duration(old.SleepAfter)), loopText(*sleepAfter)})
	}
	if budget != nil && *budget != old.Budget {
		c.Budget = budget
		c.Diffs = append(c.Diffs, Diff{"budget", budgetText(old.Budget), budgetText(*budget)})
	}
	if len(c.Diffs) > 0 {
		c.Action = Configured
	}
	return c, nil
}

func str(v *string, keep string) string {
	if v == nil {
		return keep
	}
	return *v
}

func appendDiff(ds []Diff, field, from, to string) []Diff {
	if from == to {
		return ds
	}
	return append(ds, Diff{field, from, to})
}

func appendSpecDiffs(ds []Diff, from, to state.Spec) []Diff {
	ds = appendDiff(ds, "image", from.Image, to.Image)
	ds = appendDiff(ds, "resources.cpu", from.CPU, to.CPU)
	ds = appendDiff(ds, "resources.memory", from.Memory, to.Memory)
	return appendDiff(ds, "resources.storage", from.Storage, to.Storage)
}

// podDiff is a change of pod options, each side in a few words
// (state.PodOptions Summary): "none", "runtime class gvisor, 2 labels".
func podDiff(from, to *state.PodOptions) Diff {
	return Diff{"pod", from.Summary(), to.Summary()}
}

// loopText is a loop interval as the format writes it.
func loopText(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	return d.String()
}
