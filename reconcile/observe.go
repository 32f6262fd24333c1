package reconcile

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/sporectl/sporectl/bridge"
)

// bridgeStatusTimeout bounds one bridge's answer; a bridge slower than
// this is observed as Unknown, not waited for.
const bridgeStatusTimeout = 2 * time.Second

// observeWorkers bounds concurrent bridge status calls.
const observeWorkers = 16

// Observe looks at the whole fleet once through rt, then asks every
// running, ready bridge for its status, concurrently. ids are the spores
// the store knows; runtime objects of other ids are returned as orphans.
// Nothing observed is ever stored.
func Observe(ctx context.Context, rt Runtime, ids []string) (map[string]Observed, []string, error) {
	fleet, err := rt.Observe(ctx)
	if err != nil {
		return nil, nil, err
	}
	known := make(map[string]bool, len(ids))
	out := make(map[string]Observed, len(ids))
	var ask []string
	for _, id := range ids {
		known[id] = true
		po, ok := fleet.Spores[id]
		if !ok {
			out[id] = Observed{Pod: PodAbsent, Bridge: BridgeDown}
			continue
		}
		o := Observed{Pod: po.State, Restarts: po.Restarts, Reason: po.Reason}
		switch {
		case po.Count > 1:
			o.Bridge = BridgeUnknown
			o.Reason = "MultiplePods"
		case po.State == PodRunning && po.Ready:
			o.Bridge = BridgeUnknown // until it answers
			ask = append(ask, id)
		case po.State == PodRunning, po.State == PodFailed, po.State == PodTerminating:
			o.Bridge = BridgeDown
		default:
			o.Bridge = BridgeUnknown
		}
		out[id] = o
	}
	var orphans []string
	for id, po := range fleet.Spores {
		// Only something that runs (or tries to) is an orphan: a home kept
		// after `delete` is not, and `create` of the same id adopts it.
		if !known[id] && po.State != PodAbsent {
			orphans = append(orphans, id)
		}
	}
	slices.Sort(orphans)

	eps := bridgeEndpoints(ctx, rt, ask)
	var mu sync.Mutex
	var wg sync.WaitGroup
	work := make(chan string)
	for w := 0; w < min(observeWorkers, len(ask)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				st, err := bridgeStatus(ctx, rt, eps, id)
				mu.Lock()
				o := out[id]
				if err != nil {
					o.Bridge = BridgeDown
					if o.Reason == "" {
						o.Reason = "BridgeNotAnswering"
					}
				} else {
					o.Bridge = BridgeUp
					o.Activity = string(st.State)
					if !st.Healthy && o.Reason == "" {
						o.Reason = "BridgeUnhealthy"
					}
				}
				out[id] = o
				mu.Unlock()
			}
		}()
	}
	for _, id := range ask {
		work <- id
	}
	close(work)
	wg.Wait()
	return out, orphans, nil
}

// BridgeLister is what a runtime may also offer: the endpoints of many
// bridges in a few requests rather than one Bridge call each.
type BridgeLister interface {
	BridgeEndpoints(ctx context.Context, ids []string) (map[string]BridgeEndpoint, error)
}

// endpoint is one spore's endpoint, or why there is none.
type endpoint struct {
	ep  BridgeEndpoint
	err error
}

// bridgeEndpoints asks a BridgeLister for every endpoint at once; nil
// when the runtime is none or its answer failed (callers then ask Bridge
// per spore, concurrently).
func bridgeEndpoints(ctx context.Context, rt Runtime, ids []string) map[string]endpoint {
	bl, ok := rt.(BridgeLister)
	if !ok || len(ids) == 0 {
		return nil
	}
	eps, err := bl.BridgeEndpoints(ctx, ids)
	if err != nil {
		return nil
	}
	out := make(map[string]endpoint, len(ids))
	for _, id := range ids {
		if ep, ok := eps[id]; ok {
			out[id] = endpoint{ep: ep}
		} else {
			out[id] = endpoint{err: errors.New("no way to reach its bridge")}
		}
	}
	return out
}

func bridgeStatus(ctx context.Context, rt Runtime, eps map[string]endpoint, id string) (bridge.Status, error) {
	e, ok := eps[id]
	if !ok {
		e.ep, e.err = rt.Bridge(ctx, id)
	}
	if e.err != nil {
		return bridge.Status{}, e.err
	}
	c, err := bridge.NewClient(e.ep.BaseURL, e.ep.Token, e.ep.Client)
	if err != nil {
		return bridge.Status{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, bridgeStatusTimeout)
	defer cancel()
	return c.Status(ctx)
}
