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

// startingAskTimeout bounds the ask of a bridge that is not Ready yet
// (PodObservation.Starting): one that listens answers in milliseconds,
// and one that hangs while it starts costs a pass this, not the whole
// deadline, for at most BridgeStartingWindow after it started.
const startingAskTimeout = time.Second

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
// running bridge of ids that is ready, or started and not ready yet
// (PodObservation.Starting), for its status, concurrently, under one
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
	starting := map[string]bool{}
	for _, id := range ask {
		po, ok := fleet.Spores[id]
		o, how := podObserved(po, ok)
		if how != askNot {
			toAsk = append(toAsk, id)
		}
		if how == askStarting {
			starting[id] = true
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
		c, st, err := askStatus(ctx, rt, dial, eps, id, starting[id])
		mu.Lock()
		defer mu.Unlock()
		o := out.spores[id]
		switch {
		case err != nil && starting[id] && bridgeProblem(err) == ReasonBridgeNotAnswer:
			// Not Ready, and started a moment ago: not listening yet is
			// what a bridge coming up does. The kubelet's probe, and so
			// the next pass, say Ready or not in a moment.
			o.Bridge, o.BridgeErr, o.BridgeProblem = BridgeUnknown, err, ReasonBridgeStarting
		case err != nil:
			// A bridge that broke its contract is not asked for lines nor
			// given prompts this pass: it is Down to the pass, with why.
			o.Bridge, o.BridgeErr = BridgeDown, err
			o.BridgeProblem = bridgeProblem(err)
			o.Breach = breachText(err)
		default:
			// Up, Ready or not yet: an answer is an answer, checked as
			// any bridge's (askStatus).
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

// askHow says whether, and how, a spore's bridge is asked in a pass.
type askHow int

const (
	askNot      askHow = iota // its bridge is not asked: nothing there answers
	askReady                  // a running, ready pod's: asked under the pass's deadline
	askStarting               // a running pod's that started and is not ready yet: asked briefly, and not answering is coming up
)

// podObserved is what the runtime's look at a spore says of it (po; ok
// false: it holds nothing of it), before its bridge is asked; ask says
// whether its bridge is asked, and how.
func podObserved(po PodObservation, ok bool) (o Observed, ask askHow) {
	if !ok {
		return Observed{Pod: PodAbsent, Bridge: BridgeDown}, askNot
	}
	o = Observed{Pod: po.State, Restarts: po.Restarts, Pods: po.Count, LastTermination: Reason(po.Reason),
		Exited: po.Exited, Message: exitMessage(po.ExitLog)}
	switch {
	case po.Count > 1:
		o.Bridge = BridgeUnknown
	case po.State == PodRunning && po.Ready:
		o.Bridge = BridgeUnknown // until it answers
		ask = askReady
	case po.State == PodRunning && po.Starting && !po.Exited:
		// Its bridge may answer before the readiness probe says so: a
		// woken spore is up at its bridge's first answer, not a probe
		// period later. A pod that ran for long and stopped being ready
		// is not Starting (the runtime bounds it): Down, as before.
		o.Bridge = BridgeUnknown // until it answers
		ask = askStarting
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

// askStatus asks id's bridge for its status and checks the answer
// (bridge.CheckStatus: the bridge is the agent's, its answer untrusted);
// a starting bridge (not ready yet) for at most startingAskTimeout.
func askStatus(ctx context.Context, rt Runtime, dial Dialer, eps map[string]endpoint, id string, starting bool) (BridgeClient, bridge.Status, error) {
	if starting {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, startingAskTimeout)
		defer cancel()
	}
	c, st, err := askBridge(ctx, rt, dial, eps, id)
	if err == nil {
		err = bridge.CheckStatus(st)
	}
	return c, st, err
}

func askBridge(ctx context.Context, rt Runtime, dial Dialer, eps map[string]endpoint, id string) (BridgeClient, bridge.Status, error) {
	c, err := dialBridge(ctx, rt, dial, eps, id)
	if err != nil {
		return nil, bridge.Status{}, err
	}
	st, err := c.Status(ctx)
	return c, st, err
}
