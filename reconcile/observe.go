package reconcile

import (
	"context"
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

	var mu sync.Mutex
	var wg sync.WaitGroup
	work := make(chan string)
	for w := 0; w < min(observeWorkers, len(ask)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				st, err := bridgeStatus(ctx, rt, id)
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

func bridgeStatus(ctx context.Context, rt Runtime, id string) (bridge.Status, error) {
	ep, err := rt.Bridge(ctx, id)
	if err != nil {
		return bridge.Status{}, err
	}
	c, err := bridge.NewClient(ep.BaseURL, ep.Token, ep.Client)
	if err != nil {
		return bridge.Status{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, bridgeStatusTimeout)
	defer cancel()
	return c.Status(ctx)
}
