package reconciletest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// Static is a runtime that observes a fixed set of spores running and
// ready, each bridge at its own address, as the local runtime reports
// spores whose bridges answer /healthz. It starts, stops and deletes
// nothing: benchmarks use it around real bridges.
type Static struct {
	Endpoints map[string]reconcile.BridgeEndpoint
}

var _ reconcile.Runtime = (*Static)(nil)

func (r *Static) Observe(_ context.Context, ids []string) (reconcile.FleetObservation, error) {
	out := reconcile.FleetObservation{Spores: make(map[string]reconcile.PodObservation, len(r.Endpoints))}
	for id := range r.Endpoints {
		if len(ids) == 0 || slices.Contains(ids, id) {
			out.Spores[id] = reconcile.PodObservation{ID: id, State: reconcile.PodRunning, Ready: true, Owned: true, Count: 1}
		}
	}
	return out, nil
}

func (r *Static) Start(_ context.Context, s state.Spore, _ reconcile.Launch) error {
	if _, ok := r.Endpoints[s.ID]; ok {
		return nil // running already: nothing changes
	}
	return fmt.Errorf("the static runtime starts nothing (%s)", s.ID)
}

func (r *Static) Stop(context.Context, string) error {
	return errors.New("the static runtime stops nothing")
}

func (r *Static) Delete(context.Context, string, bool) error {
	return errors.New("the static runtime deletes nothing")
}

func (r *Static) Logs(context.Context, string, reconcile.LogOptions, io.Writer) error { return nil }

func (r *Static) Bridge(_ context.Context, id string) (reconcile.BridgeEndpoint, error) {
	ep, ok := r.Endpoints[id]
	if !ok {
		return ep, fmt.Errorf("bridge of %s: %w", id, state.ErrNotFound)
	}
	return ep, nil
}
