package reconcile

import "github.com/sporectl/sporectl/state"

// A spore whose stored data cannot be read is judged alone: Error, with
// its damage named (ReasonStoreDamage), never ingested, healed or
// delivered to, while the pass goes on for every other spore
// (docs/recovery.md, "A spore's stored data is damaged"). The damage is
// found by the pass's own reads: a record a whole read left out
// (state.DamagedError), a log whose last lines do not read (lastLines),
// or the mark an earlier pass recorded, which stays until `sporectl
// repair` (or `reset`) clears it, since a later pass may read nothing
// of the damaged part and must not call the spore healthy for that.

// damage is what the snapshot knows of its spores' damage, keyed by id,
// each as the words health shows after "store damage: ".
func (s *Snapshot) damage() map[string]string {
	out := map[string]string{}
	for id, c := range s.Damaged {
		out[id] = damageText(c)
	}
	for _, sp := range s.Spores {
		if _, ok := out[sp.ID]; !ok && sp.HealthReason == string(ReasonStoreDamage) {
			out[sp.ID] = "found by an earlier pass (`sporectl check` names it; `sporectl repair " + sp.ID + "` sets it aside)"
		}
	}
	return out
}

// damageText names a damage by its place and what is wrong there.
func damageText(c *state.CorruptError) string { return c.Where() + ": " + c.Reason }

// quarantine marks the damaged spores' observations.
func (o *observation) quarantine(damage map[string]string) {
	for id, text := range damage {
		ob := o.spores[id]
		ob.Damage = text
		ob.display()
		o.spores[id] = ob
	}
}
