package colonyspec

import (
	"strconv"
	"strings"
	"time"

	"github.com/sporectl/sporectl/state"
)

// Export is the document of colony as stored: every spore of it (by id)
// with each field it has, so that applying it to the same store changes
// nothing, and to an empty one makes the same wishes. Fields that are
// empty in the store (no swarm, no loop) are left out.
func Export(colony string, spores []state.Spore, settings state.Settings) Document {
	d := Document{APIVersion: APIVersion, Kind: Kind, Metadata: Metadata{Name: colony}, Spec: ColonySpec{Spores: []Spore{}}}
	if c := settings.Colony(colony); !c.IsZero() {
		if c.SleepAfter != 0 {
			d.Spec.SleepAfter = ptr(loopText(time.Duration(c.SleepAfter)))
		}
		if c.WakeOnMessage {
			d.Spec.WakeOnMessage = ptr(true)
		}
		d.Spec.Budget = budgetOf(c.Budget)
		d.Spec.Pod = podOf(c.Pod)
		if c.Egress != "" {
			d.Spec.Egress = ptr(c.Egress)
		}
		d.Spec.Schedules = schedulesOf(c.Schedules)
	}
	for _, s := range spores {
		if s.Colony != colony {
			continue
		}
		e := Spore{ID: s.ID, Rank: ptr(string(s.Rank)), Fields: Fields{Desired: ptr(string(s.Desired))}}
		if s.Swarm != "" {
			e.Swarm = ptr(s.Swarm)
		}
		if s.Role != "" {
			e.Role = ptr(s.Role)
		}
		if s.Loop != 0 {
			e.Loop = ptr(loopText(time.Duration(s.Loop)))
		}
		if s.SleepAfter != 0 {
			e.SleepAfter = ptr(loopText(time.Duration(s.SleepAfter)))
		}
		if s.Spec.Image != "" {
			e.Image = ptr(s.Spec.Image)
		}
		e.Budget = budgetOf(s.Budget)
		e.Pod = podOf(s.Spec.Pod)
		r := Resources{}
		for _, q := range []struct {
			dst **string
			v   string
		}{{&r.CPU, s.Spec.CPU}, {&r.Memory, s.Spec.Memory}, {&r.Storage, s.Spec.Storage}} {
			if q.v != "" {
				*q.dst = ptr(q.v)
			}
		}
		if r != (Resources{}) {
			e.Resources = &r
		}
		d.Spec.Spores = append(d.Spec.Spores, e)
	}
	return d
}

// budgetOf is a stored budget as a file writes it; nil for none.
func budgetOf(sb state.Budget) *Budget {
	if sb.IsZero() {
		return nil
	}
	b := &Budget{}
	if sb.TokensPerDay != 0 {
		b.TokensPerDay = ptr(strconv.FormatInt(sb.TokensPerDay, 10))
	}
	if sb.CostPerDayMicros != 0 {
		b.CostPerDay = ptr(strings.TrimPrefix(state.CostText(sb.CostPerDayMicros), "$"))
	}
	return b
}
