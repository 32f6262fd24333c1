// Package reconciletest has a fake runtime and fake bridges for fast
// tests of the pass and of the commands on it. They behave like the real
// ones in what a pass relies on (Start of a running spore changes
// nothing; a bridge numbers its lines and treats a repeated prompt id as
// a duplicate) and nothing more. Tests of the real things use the local
// and kube runtimes and the real bridge.
package reconciletest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// Runtime is an in-memory runtime. Its zero value is not usable: use New.
type Runtime struct {
	mu      sync.Mutex
	pods    map[string]*reconcile.PodObservation
	bridges map[string]*Bridge
	// Calls counts method calls by name ("Start", "Stop", …).
	calls map[string]int
	// identity is the Launch.Identity of each spore's last start that
	// started it.
	identity map[string]string
	// StartErr, when set for an id, makes Start of it fail.
	StartErr map[string]error
	// DeleteErr, when set for an id, makes Delete of it fail.
	DeleteErr map[string]error
	// ObserveErr makes Observe fail.
	ObserveErr error
	// lastObserved is the ids of the last Observe (nil: the fleet).
	lastObserved []string
	// AgentLines is what a started spore's bridge answers to each prompt
	// (echo-like); nil for nothing.
	AgentLines func(p bridge.PromptRequest) []string
}

// New returns an empty fake runtime.
func New() *Runtime {
	return &Runtime{pods: map[string]*reconcile.PodObservation{}, bridges: map[string]*Bridge{}, calls: map[string]int{}, identity: map[string]string{}, StartErr: map[string]error{}, DeleteErr: map[string]error{}}
}

var _ reconcile.Runtime = (*Runtime)(nil)

// Calls returns how often name was called.
func (r *Runtime) Calls(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[name]
}

// Identity is what the spore's last start that started it was told of
// its identity (Launch.Identity); "" when none or never started.
func (r *Runtime) Identity(id string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.identity[id]
}

// Bridge returns the fake bridge of id (created on first use, kept across
// restarts of the spore like a log in its home).
func (r *Runtime) BridgeOf(id string) *Bridge {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bridgeLocked(id)
}

func (r *Runtime) bridgeLocked(id string) *Bridge {
	b, ok := r.bridges[id]
	if !ok {
		b = &Bridge{ID: id, seen: map[string]bool{}, agent: r.AgentLines}
		r.bridges[id] = b
	}
	return b
}

// Set puts a pod observation in place (to kill a spore, fail it, …).
func (r *Runtime) Set(po reconcile.PodObservation) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if po.Count == 0 && po.State != reconcile.PodAbsent {
		po.Count = 1
	}
	po.Owned = true
	r.pods[po.ID] = &po
}

// Kill makes the spore's tree gone, as if SIGKILLed: Failed, reason.
func (r *Runtime) Kill(id, reason string) {
	r.Set(reconcile.PodObservation{ID: id, State: reconcile.PodFailed, Reason: reason})
	r.BridgeOf(id).SetUp(false)
}

func (r *Runtime) Observe(ctx context.Context, ids []string) (reconcile.FleetObservation, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls["Observe"]++
	r.lastObserved = slices.Clone(ids)
	if r.ObserveErr != nil {
		return reconcile.FleetObservation{}, r.ObserveErr
	}
	if len(ids) > 0 {
		out := reconcile.FleetObservation{Spores: make(map[string]reconcile.PodObservation, len(ids))}
		for _, id := range ids {
			if po, ok := r.pods[id]; ok {
				out.Spores[id] = *po
			}
		}
		return out, nil
	}
	out := reconcile.FleetObservation{Spores: make(map[string]reconcile.PodObservation, len(r.pods))}
	for id, po := range r.pods {
		out.Spores[id] = *po
	}
	return out, nil
}

// LastObserved is the ids the last Observe was asked about: nil for the
// whole fleet.
func (r *Runtime) LastObserved() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.lastObserved)
}

func (r *Runtime) Start(ctx context.Context, s state.Spore, l reconcile.Launch) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls["Start"]++
	if err := r.StartErr[s.ID]; err != nil {
		return err
	}
	if po, ok := r.pods[s.ID]; ok && po.State == reconcile.PodRunning {
		return nil
	}
	c, err := l.Creds.Credentials(ctx)
	if err != nil {
		return err
	}
	r.identity[s.ID] = l.Identity
	restarts := 0
	if po, ok := r.pods[s.ID]; ok {
		restarts = po.Restarts
	}
	r.pods[s.ID] = &reconcile.PodObservation{ID: s.ID, State: reconcile.PodRunning, Ready: true, Owned: true, Count: 1, Restarts: restarts}
	b := r.bridgeLocked(s.ID)
	b.mu.Lock()
	b.up, b.token = true, c.BridgeToken
	b.mu.Unlock()
	return nil
}

func (r *Runtime) Stop(ctx context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls["Stop"]++
	delete(r.pods, id)
	if b, ok := r.bridges[id]; ok {
		b.SetUp(false)
	}
	return nil
}

func (r *Runtime) Delete(ctx context.Context, id string, purgeHome bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls["Delete"]++
	if err := r.DeleteErr[id]; err != nil {
		return err
	}
	delete(r.pods, id)
	if purgeHome {
		delete(r.bridges, id)
	} else if b, ok := r.bridges[id]; ok {
		b.SetUp(false)
	}
	return nil
}

func (r *Runtime) Logs(ctx context.Context, id string, opt reconcile.LogOptions, w io.Writer) error {
	_, err := fmt.Fprintf(w, "fake logs of %s\n", id)
	return err
}

func (r *Runtime) Bridge(ctx context.Context, id string) (reconcile.BridgeEndpoint, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, ok := r.bridges[id]
	if !ok {
		return reconcile.BridgeEndpoint{}, fmt.Errorf("bridge of %s: %w", id, state.ErrNotFound)
	}
	return reconcile.BridgeEndpoint{BaseURL: "fake://" + id, Token: b.token}, nil
}

// Dial is the reconcile.Dialer for this runtime's bridges.
func (r *Runtime) Dial(ep reconcile.BridgeEndpoint) (reconcile.BridgeClient, error) {
	id, ok := strings.CutPrefix(ep.BaseURL, "fake://")
	if !ok {
		return nil, fmt.Errorf("not a fake bridge: %s", ep.BaseURL)
	}
	return r.BridgeOf(id), nil
}

// IDs lists the spores that have a pod observation.
func (r *Runtime) IDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.pods))
}

// Bridge is a fake bridge: numbered lines, a prompt log with duplicate
// detection, a state.
type Bridge struct {
	ID string

	mu      sync.Mutex
	up      bool
	token   string
	state   bridge.State
	lines   []bridge.Event
	seen    map[string]bool
	prompts []bridge.PromptRequest
	agent   func(bridge.PromptRequest) []string
	// Hang makes Status block until the context ends.
	hang bool
	// gapAt, when set, makes the served seq of that line skip one.
	gapAt uint64
	// ErrStatus answers status with this error.
	errStatus error
	// agentErr is what the bridge says of its agent's last start.
	agentErr string
	// refuse, when set, is asked about each prompt before it is taken: a
	// non-nil answer refuses it (bridge.APIError for an HTTP answer).
	refuse func(bridge.PromptRequest) error
}

// SetRefuse scripts the bridge's answer to a prompt: fn's error refuses
// it, nil takes it as usual; a nil fn takes every prompt again.
func (b *Bridge) SetRefuse(fn func(bridge.PromptRequest) error) {
	b.mu.Lock()
	b.refuse = fn
	b.mu.Unlock()
}

var _ reconcile.BridgeClient = (*Bridge)(nil)

// SetUp makes the bridge answer (or not).
func (b *Bridge) SetUp(up bool) { b.mu.Lock(); b.up = up; b.mu.Unlock() }

// SetAgentError sets what the bridge says of its agent's last start
// (its status's agent_error; "" for none).
func (b *Bridge) SetAgentError(s string) { b.mu.Lock(); b.agentErr = s; b.mu.Unlock() }

// SetState sets what the bridge says the agent is doing.
func (b *Bridge) SetState(s bridge.State) { b.mu.Lock(); b.state = s; b.mu.Unlock() }

// SetHang makes Status hang until its context ends.
func (b *Bridge) SetHang(h bool) { b.mu.Lock(); b.hang = h; b.mu.Unlock() }

// SetStatusErr makes Status answer err.
func (b *Bridge) SetStatusErr(err error) { b.mu.Lock(); b.errStatus = err; b.mu.Unlock() }

// Wipe forgets every line, as a home that was wiped.
func (b *Bridge) Wipe() { b.mu.Lock(); b.lines = nil; b.seen = map[string]bool{}; b.mu.Unlock() }

// Skip makes the next line's number skip one (a bridge that lost a line).
func (b *Bridge) Skip() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.gapAt = uint64(len(b.lines)) + 1
}

// Write appends numbered lines, as the agent writing.
func (b *Bridge) Write(lines ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.writeLocked(lines...)
}

func (b *Bridge) writeLocked(lines ...string) {
	for _, l := range lines {
		seq := uint64(len(b.lines)) + 1
		if len(b.lines) > 0 {
			seq = b.lines[len(b.lines)-1].Seq + 1
		}
		if b.gapAt != 0 && seq == b.gapAt {
			seq++
			b.gapAt = 0
		}
		raw := json.RawMessage(l)
		if !json.Valid(raw) {
			raw, _ = json.Marshal(l)
		}
		b.lines = append(b.lines, bridge.Event{Seq: seq, At: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(seq) * time.Second), Line: raw})
	}
}

// Prompts returns every prompt the bridge accepted (duplicates excluded).
func (b *Bridge) Prompts() []bridge.PromptRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.prompts)
}

func (b *Bridge) lastSeq() uint64 {
	if len(b.lines) == 0 {
		return 0
	}
	return b.lines[len(b.lines)-1].Seq
}

// ErrDown is what a bridge that does not answer returns.
var ErrDown = errors.New("fake bridge: connection refused")

func (b *Bridge) Status(ctx context.Context) (bridge.Status, error) {
	b.mu.Lock()
	hang := b.hang
	b.mu.Unlock()
	if hang {
		<-ctx.Done()
		return bridge.Status{}, ctx.Err()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.up {
		return bridge.Status{}, ErrDown
	}
	if b.errStatus != nil {
		return bridge.Status{}, b.errStatus
	}
	st := b.state
	if st == "" {
		st = bridge.StateIdle
	}
	return bridge.Status{State: st, LastSeq: b.lastSeq(), Healthy: true, Agent: "fake", AgentError: b.agentErr}, nil
}

func (b *Bridge) Events(ctx context.Context, after uint64, limit int, wait time.Duration) (bridge.Events, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.up {
		return bridge.Events{}, ErrDown
	}
	if after > b.lastSeq() {
		return bridge.Events{}, fmt.Errorf("fake events: %w", bridge.ErrAhead)
	}
	if limit <= 0 {
		limit = bridge.DefaultLimit
	}
	out := bridge.Events{LastSeq: b.lastSeq(), Events: []bridge.Event{}}
	size := 0
	for _, e := range b.lines {
		if e.Seq > after && len(out.Events) < limit {
			// As the real bridge: a page stops at its bound of bytes, but
			// holds at least one line (however long: a hostile test's).
			if len(out.Events) > 0 && size+len(e.Line) > bridge.MaxPageLineBytes {
				break
			}
			size += len(e.Line)
			out.Events = append(out.Events, e)
		}
	}
	return out, nil
}

func (b *Bridge) Prompt(ctx context.Context, p bridge.PromptRequest) (bridge.PromptAccepted, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.up {
		return bridge.PromptAccepted{}, ErrDown
	}
	if b.seen[p.ID] {
		return bridge.PromptAccepted{ID: p.ID, Position: -1, Duplicate: true}, nil
	}
	if b.refuse != nil {
		if err := b.refuse(p); err != nil {
			return bridge.PromptAccepted{}, err
		}
	}
	b.seen[p.ID] = true
	b.prompts = append(b.prompts, p)
	if b.agent != nil {
		b.writeLocked(b.agent(p)...)
	}
	pos := 0
	if b.state == bridge.StateWorking {
		pos = 1 // behind the turn that runs, as the real bridge queues it
	}
	return bridge.PromptAccepted{ID: p.ID, Position: pos}, nil
}
