package reconcile

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/reconcile/transcript"
)

// DefaultObserveDeadline bounds the asking of every bridge in a pass,
// whatever their number and however many hang: a bridge asked that has
// not answered by then is Down (BridgeNotAnswering), one whose turn came
// after it is Unknown (BridgeNotAsked). docs/health.md.
const DefaultObserveDeadline = 3 * time.Second

// bridgeWorkers bounds concurrent bridge calls. Each waits mostly on the
// network, so many in flight cost little.
const bridgeWorkers = 64

// observation is what observe learned: per-spore state, the clients of
// the bridges that answered (ingest and delivery reuse them), orphans.
type observation struct {
	spores  map[string]Observed
	clients map[string]BridgeClient
	orphans []string
}

// Observe looks at the whole fleet once through rt, then asks every
// running, ready bridge of ids for its status, concurrently, under one
// deadline. ids are the spores the store knows; runtime objects of other
// ids are returned as orphans. Nothing observed is ever stored.
func Observe(ctx context.Context, rt Runtime, ids []string) (map[string]Observed, []string, error) {
	obs, err := observe(ctx, rt, DialHTTP, nil, ids, ids, false, DefaultObserveDeadline)
	if err != nil {
		return nil, nil, err
	}
	return obs.spores, obs.orphans, nil
}

// observe is Observe for a pass: known are every id in the store (to tell
// orphans), ask the ids whose bridges are asked. A pass over named spores
// (named) looks at those alone: the runtime is asked about ask, not the
// fleet, and no orphan is told (a pass over none asks nothing). looked,
// when set, is the fleet's look already made, taken instead of another
// (not for a named pass).
func observe(ctx context.Context, rt Runtime, dial Dialer, looked *FleetObservation, known, ask []string, named bool, deadline time.Duration) (observation, error) {
	var scope []string
	if named {
		if len(ask) == 0 {
			return observation{spores: map[string]Observed{}, clients: map[string]BridgeClient{}}, nil
		}
		scope = ask
	}
	var fleet FleetObservation
	if looked != nil && !named {
		fleet = *looked
	} else {
		var err error
		if fleet, err = rt.Observe(ctx, scope); err != nil {
			return observation{}, err
		}
	}
	out := observation{spores: make(map[string]Observed, len(ask)), clients: map[string]BridgeClient{}}
	var toAsk []string
	for _, id := range ask {
		po, ok := fleet.Spores[id]
		o, asked := podObserved(po, ok)
		if asked {
			toAsk = append(toAsk, id)
		}
		out.spores[id] = o
	}
	if !named {
		isKnown := make(map[string]bool, len(known))
		for _, id := range known {
			isKnown[id] = true
		}
		out.orphans = orphansIn(fleet, func(id string) bool { return isKnown[id] })
	}

	ctx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	eps := bridgeEndpoints(ctx, rt, fleet, toAsk)
	var mu sync.Mutex
	forEach(ctx, toAsk, bridgeWorkers, func(id string) {
		if ctx.Err() != nil {
			// Its turn came after the deadline: it was never asked, so
			// nothing is known of it. Down would say it failed to answer,
			// which a slow way to many bridges (the API server's proxy
			// under load) would claim of bridges that answer.
			mu.Lock()
			defer mu.Unlock()
			o := out.spores[id]
			o.BridgeProblem = ReasonBridgeNotAsked
			out.spores[id] = o
			return
		}
		c, st, err := askBridge(ctx, rt, dial, eps, id)
		if err == nil {
			err = bridge.CheckStatus(st)
		}
		mu.Lock()
		defer mu.Unlock()
		o := out.spores[id]
		if err != nil {
			// A bridge that broke its contract is not asked for lines nor
			// given prompts this pass: it is Down to the pass, with why.
			o.Bridge, o.BridgeErr = BridgeDown, err
			o.BridgeProblem = bridgeProblem(err)
			o.Breach = breachText(err)
		} else {
			o.Bridge, o.Activity = BridgeUp, st.State
			o.BridgeLastSeq, o.Queue, o.SessionID = st.LastSeq, max(st.Queue, 0), statusText(st.SessionID)
			o.AgentError = statusText(st.AgentError)
			if !st.Healthy {
				o.BridgeProblem = ReasonBridgeUnhealthy
			}
			out.clients[id] = c
		}
		out.spores[id] = o
	})
	for id, o := range out.spores {
		o.display()
		out.spores[id] = o
	}
	return out, nil
}

// podObserved is what the runtime's look at a spore says of it (po; ok
// false: it holds nothing of it), before its bridge is asked; ask says
// its bridge is to be asked (a running, ready pod).
func podObserved(po PodObservation, ok bool) (o Observed, ask bool) {
	if !ok {
		return Observed{Pod: PodAbsent, Bridge: BridgeDown}, false
	}
	o = Observed{Pod: po.State, Restarts: po.Restarts, Pods: po.Count, LastTermination: Reason(po.Reason),
		Exited: po.Exited, Message: exitMessage(po.ExitLog)}
	switch {
	case po.Count > 1:
		o.Bridge = BridgeUnknown
	case po.State == PodRunning && po.Ready:
		o.Bridge = BridgeUnknown // until it answers
		ask = true
	case po.State == PodRunning, po.State == PodFailed, po.State == PodTerminating, po.State == PodAbsent:
		o.Bridge = BridgeDown
	default:
		o.Bridge = BridgeUnknown
	}
	return o, ask
}

// orphansIn are the ids of what fleet holds for no spore of the store
// (known says which ids are), sorted. Only something that runs (or tries
// to) is an orphan: a home kept after `delete` is not, and `create` of
// the same id adopts it.
func orphansIn(fleet FleetObservation, known func(id string) bool) []string {
	var out []string
	for id, po := range fleet.Spores {
		if po.State != PodAbsent && !known(id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// exitMessage is the bridge's fatal error in the end of its stderr, one
// line with every control character written visibly (an ESC as \x1b).
func exitMessage(tail string) string {
	return transcript.Sanitize(bridge.FatalError(tail))
}

// bridgeProblem names why a bridge call failed. A call the way to the
// bridge refused (the API server's proxy answering 400 "address not
// allowed" or 403) is not a bridge that does not answer.
func bridgeProblem(err error) Reason {
	var ae *bridge.APIError
	var ne *noEndpointError
	var be *bridge.BreachError
	switch {
	case errors.As(err, &be):
		return ReasonContractBreach
	case errors.As(err, &ne):
		return ReasonNoEndpoint
	case errors.As(err, &ae) && (ae.Status == http.StatusBadRequest || ae.Status == http.StatusForbidden):
		return ReasonBridgeRefused
	}
	return ReasonBridgeNotAnswer
}

// forEach runs fn for every id on at most workers goroutines; fn must
// honour ctx itself (once it has ended, each remaining call returns at
// once).
func forEach(ctx context.Context, ids []string, workers int, fn func(id string)) {
	if len(ids) == 0 {
		return
	}
	var wg sync.WaitGroup
	work := make(chan string)
	for range min(workers, len(ids)) {
		wg.Go(func() {
			for id := range work {
				fn(id)
			}
		})
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
}

// BridgeLister is what a runtime may also offer: the endpoints of many
// bridges in a few requests rather than one Bridge call each. fleet is
// the runtime's own observation of the same pass (Runtime.Observe's
// answer), so what it saw there (a pod's address, PodObservation.IP) is
// not asked for again.
type BridgeLister interface {
	BridgeEndpoints(ctx context.Context, fleet FleetObservation, ids []string) (map[string]BridgeEndpoint, error)
}

// endpoint is one spore's endpoint, or why there is none.
type endpoint struct {
	ep  BridgeEndpoint
	err error
}

type noEndpointError struct{ id string }

func (e *noEndpointError) Error() string { return "no way to reach the bridge of " + e.id }

// bridgeEndpoints asks a BridgeLister for every endpoint at once; nil
// when the runtime is none or its answer failed (callers then ask Bridge
// per spore, concurrently).
func bridgeEndpoints(ctx context.Context, rt Runtime, fleet FleetObservation, ids []string) map[string]endpoint {
	bl, ok := rt.(BridgeLister)
	if !ok || len(ids) == 0 {
		return nil
	}
	eps, err := bl.BridgeEndpoints(ctx, fleet, ids)
	if err != nil {
		return nil
	}
	out := make(map[string]endpoint, len(ids))
	for _, id := range ids {
		if ep, ok := eps[id]; ok {
			out[id] = endpoint{ep: ep}
		} else {
			out[id] = endpoint{err: &noEndpointError{id}}
		}
	}
	return out
}

// dialBridge returns a client for id's bridge, from eps or asking rt.
func dialBridge(ctx context.Context, rt Runtime, dial Dialer, eps map[string]endpoint, id string) (BridgeClient, error) {
	e, ok := eps[id]
	if !ok {
		e.ep, e.err = rt.Bridge(ctx, id)
	}
	if e.err != nil {
		return nil, e.err
	}
	return dial(e.ep)
}

func askBridge(ctx context.Context, rt Runtime, dial Dialer, eps map[string]endpoint, id string) (BridgeClient, bridge.Status, error) {
	c, err := dialBridge(ctx, rt, dial, eps, id)
	if err != nil {
		return nil, bridge.Status{}, err
	}
	st, err := c.Status(ctx)
	return c, st, err
}
