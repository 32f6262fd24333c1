package reconcile

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sporectl/sporectl/reconcile/outbox"
	"github.com/sporectl/sporectl/state"
)

// A colony's scheduled prompts (docs/schedules.md) are upkeep: a
// delivering pass over the fleet finds each schedule's latest slot at or
// before now that is after the schedule's claim (state.Schedule.Due),
// shows the prompt on the snapshot as it shows a loop prompt, and records
// it in the transaction that records the rest of what it decided
// (decided.go), with the claim: the schedule's Done moved to the slot in
// the settings, read again in that transaction. A slot is therefore
// recorded once whatever passes overlap or die: the store serializes the
// settings' read and write (the contract's ScheduleClaim), so a second
// pass finds the slot claimed and takes its prompt out of its plan, and
// a pass killed before its commit leaves neither the claim nor the
// prompt. A slot whose target cannot be told (no spore, several, one
// stopped) is claimed all the same and skipped, with a warning: it would
// be late by the time someone fixed the file.

// ScheduleFrom is the sender of a scheduled prompt; its entry's From is
// ScheduleFrom:SLOT (state.Schedule.SlotID), so a slot is found in a log.
const ScheduleFrom = "sporectl:schedule"

// ScheduleMark is the first line of a scheduled prompt.
func ScheduleMark(name string) string { return "[scheduled: " + name + "]" }

// slotted is one due slot, decided on the snapshot.
type slotted struct {
	colony string
	sched  state.Schedule // as the snapshot read it
	slot   time.Time
	msg    outbox.Message
	entry  *state.OutboxEntry // nil: no target (why says)
	why    string
	// Set by claimSlots and recordUpkeep.
	claimed, queued bool
}

// dueSlots decides, on the snapshot of a delivering pass over the fleet,
// which schedules have a slot due, resolves each one's target and adds
// its prompt to the target's upkeep (up, returned with any new entry),
// shown on the snapshot's queue when the target is awake. Nothing is
// written here.
func dueSlots(snap *Snapshot, opt Options, now time.Time, up []*upkept) ([]*slotted, []*upkept) {
	if !opt.Deliver || opt.DryRun || snap.Named || snap.Settings.Colonies == nil {
		return nil, up
	}
	var out []*slotted
	cols := *snap.Settings.Colonies
	for _, colony := range slices.Sorted(maps.Keys(cols)) {
		for _, s := range cols[colony].Schedules {
			slot, ok := s.Due(now)
			if !ok {
				continue
			}
			sl := &slotted{colony: colony, sched: s, slot: slot}
			out = append(out, sl)
			i, why := scheduleTarget(s, colony, snap.Spores)
			if i < 0 {
				sl.why = why
				continue
			}
			sp := snap.Spores[i]
			sl.msg = outbox.Message{To: sp.ID, From: ScheduleFrom + ":" + s.SlotID(slot), Kind: state.KindMessage, Mark: ScheduleMark(s.Name), Text: s.Prompt, Wake: true}
			sl.entry = &state.OutboxEntry{ID: outbox.NewMessageID(), Spore: sp.ID, From: sl.msg.From, Text: outbox.Compose(sl.msg), At: now, Wake: true}
			u := upkeepOf(&up, i)
			u.slots = append(u.slots, sl)
			if sp.Desired == state.Running {
				snap.Pending[sp.ID] = append(snap.Pending[sp.ID], *sl.entry)
			}
		}
	}
	return out, up
}

// upkeepOf is the upkeep of the snapshot's spore i, added to up if it
// has none yet.
func upkeepOf(up *[]*upkept, i int) *upkept {
	for _, u := range *up {
		if u.i == i {
			return u
		}
	}
	u := &upkept{i: i}
	*up = append(*up, u)
	return u
}

// scheduleTarget is the index in spores of s's target in colony, or -1
// and why there is none: To names a spore of the colony, or SWARM/ROLE
// the one spore of the colony in that swarm with that role (as a swarm
// tell finds a teammate); none or several is no target, never a guess.
func scheduleTarget(s state.Schedule, colony string, spores []state.Spore) (int, string) {
	id, swarm, role := s.Target()
	var found []int
	for i, sp := range spores {
		if sp.Colony != colony {
			continue
		}
		if id != "" && sp.ID == id || id == "" && sp.Swarm == swarm && sp.Role == role {
			found = append(found, i)
		}
	}
	switch {
	case len(found) == 1:
		return found[0], ""
	case len(found) == 0 && id != "":
		return -1, fmt.Sprintf("colony %s has no spore %s", colony, id)
	case len(found) == 0:
		return -1, fmt.Sprintf("swarm %s of colony %s has no spore with role %s", swarm, colony, role)
	}
	ids := make([]string, 0, len(found))
	for _, i := range found {
		ids = append(ids, spores[i].ID)
	}
	return -1, fmt.Sprintf("swarm %s of colony %s has %d spores with role %s (%s): give each its own role", swarm, colony, len(found), role, strings.Join(ids, ", "))
}

// claimSlots claims, inside tx, each slot still due on the settings read
// there: the schedule as the snapshot read it (a schedule applied anew
// since is decided again by the next pass) with the slot after its Done,
// which moves to the slot. Slots another pass claimed are left out.
func claimSlots(ctx context.Context, tx state.Tx, slots []*slotted) error {
	if len(slots) == 0 {
		return nil
	}
	settings, err := tx.Settings(ctx)
	if err != nil {
		return fmt.Errorf("read settings: %w", err)
	}
	changed := false
	for _, sl := range slots {
		sl.claimed, sl.queued = false, false
		c := settings.Colony(sl.colony)
		k := slices.IndexFunc(c.Schedules, func(s state.Schedule) bool { return s.Name == sl.sched.Name })
		if k < 0 || c.Schedules[k] != sl.sched {
			continue // claimed by another pass, or changed since the snapshot
		}
		c.Schedules = slices.Clone(c.Schedules)
		c.Schedules[k].Done = sl.slot
		settings = settings.WithColony(sl.colony, c)
		sl.claimed, changed = true, true
	}
	if !changed {
		return nil
	}
	if err := tx.PutSettings(ctx, settings); err != nil {
		return fmt.Errorf("claim scheduled slots: %w", err)
	}
	return nil
}

// recordSlots records, inside tx, the claimed slots of one spore's
// upkeep on sp as read in tx, and returns it as written. A target that
// is stopped, or that refuses the prompt (outbox's typed refusals, which
// write nothing), skips the slot; it stays claimed.
func recordSlots(ctx context.Context, tx state.Tx, u *upkept, sp state.Spore, now time.Time) (state.Spore, error) {
	for _, sl := range u.slots {
		if !sl.claimed {
			continue
		}
		if sp.Desired == state.Stopped {
			sl.why = fmt.Sprintf("spore %s is stopped", sp.ID)
			continue
		}
		r, err := outbox.Record(ctx, tx, sp, sl.msg, sl.entry.ID, now)
		var asleep *outbox.AsleepError
		var large *outbox.TooLargeError
		if errors.As(err, &asleep) || errors.As(err, &large) {
			sl.why = err.Error()
			continue
		}
		if err != nil {
			return sp, fmt.Errorf("record scheduled prompt %s: %w", sl.sched.SlotID(sl.slot), err)
		}
		sl.queued, u.lastSeq = true, r.Seq
		// Its event was appended, and it may have woken sp: read it again.
		if sp, err = tx.Spore(ctx, sp.ID); err != nil {
			return sp, err
		}
	}
	return sp, nil
}

// logSlots says what became of each due slot once recorded.
func (ps *Pass) logSlots(slots []*slotted) {
	for _, sl := range slots {
		id := sl.sched.SlotID(sl.slot)
		switch {
		case sl.queued:
			ps.logger().Info("scheduled prompt recorded", "slot", id, "colony", sl.colony, "spore", sl.entry.Spore)
		case sl.claimed:
			why := sl.why
			if why == "" {
				why = "its spore was deleted"
			}
			ps.logger().Warn("scheduled prompt skipped", "slot", id, "colony", sl.colony, "reason", why)
		}
	}
}

// ScheduleRun is one schedule's next slot for a spore.
type ScheduleRun struct {
	Colony   string    `json:"colony"`
	Name     string    `json:"name"`
	Cron     string    `json:"cron"`
	Timezone string    `json:"timezone,omitempty"`
	Next     time.Time `json:"next"`
}

// NextRuns is, soonest first, the next slot of each schedule whose
// target is spore id as the store stands (all is every spore: a
// SWARM/ROLE target is resolved among them, as a pass resolves it), for
// `status` and `describe`. A schedule whose target is ambiguous or
// missing is no one's.
func NextRuns(settings state.Settings, all []state.Spore, id string, now time.Time) []ScheduleRun {
	return runsByTarget(settings, all, now)[id]
}

// runsByTarget is NextRuns for every spore at once, by id.
func runsByTarget(settings state.Settings, all []state.Spore, now time.Time) map[string][]ScheduleRun {
	if settings.Colonies == nil {
		return nil
	}
	out := map[string][]ScheduleRun{}
	for colony, c := range *settings.Colonies {
		for _, s := range c.Schedules {
			i, _ := scheduleTarget(s, colony, all)
			if i < 0 {
				continue
			}
			if next, ok := s.Next(now); ok {
				id := all[i].ID
				out[id] = append(out[id], ScheduleRun{Colony: colony, Name: s.Name, Cron: s.Cron, Timezone: s.Timezone, Next: next})
			}
		}
	}
	for _, runs := range out {
		slices.SortFunc(runs, func(a, b ScheduleRun) int {
			if c := a.Next.Compare(b.Next); c != 0 {
				return c
			}
			return strings.Compare(a.Colony+"/"+a.Name, b.Colony+"/"+b.Name)
		})
	}
	return out
}

// nextRuns fills each row's NextSchedule from the snapshot's settings.
func nextRuns(r *Result, snap *Snapshot, now time.Time) {
	if snap.Settings.Colonies == nil {
		return
	}
	all := snap.All
	if all == nil {
		all = snap.Spores
	}
	runs := runsByTarget(snap.Settings, all, now)
	for i := range r.Spores {
		if rs := runs[r.Spores[i].ID]; len(rs) > 0 {
			next := rs[0].Next
			r.Spores[i].NextSchedule = &next
		}
	}
}
