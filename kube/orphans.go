package kube

import (
	"slices"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// Orphans lists the spores the runtime observed objects for but the store
// does not know, sorted. They are only reported: removing one takes an
// explicit request (Delete with the orphan's id), never a reconcile pass,
// because the store may be the one that is wrong (a restored backup, a
// second colony sharing the namespace by mistake).
func Orphans(obs reconcile.FleetObservation, spores []state.Spore) []string {
	known := make(map[string]bool, len(spores))
	for _, s := range spores {
		known[s.ID] = true
	}
	var out []string
	for id := range obs.Spores {
		if !known[id] {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}
