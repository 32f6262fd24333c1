package reconcile

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/state"
)

// startWorkers bounds concurrent runtime starts and stops. On Kubernetes
// each start is a few round trips that mostly wait on etcd, so a few dozen
// in flight keep the API server busy without tripping its fairness
// limits; locally each is a fork and a few small files.
const startWorkers = 32

// errWishChanged: a newer wish arrived between the snapshot and the act,
// so the start or stop planned on the old one was not made.
var errWishChanged = errors.New("the desired state changed since the pass looked; the next pass acts on the new one")

// NewCredentials returns fresh credentials for a start and the hash of
// the API token, the only form the store keeps.
func NewCredentials() (Credentials, state.TokenHash, error) {
	tok, hash, err := state.NewToken()
	if err != nil {
		return Credentials{}, "", err
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return Credentials{}, "", fmt.Errorf("generate bridge token: %w", err)
	}
	return Credentials{APIToken: tok, BridgeToken: "sbt_" + base64.RawURLEncoding.EncodeToString(b)}, hash, nil
}

// act carries out the plan: credentials first (their hashes committed
// before any plaintext leaves this process), then starts and stops in
// parallel, then deliveries. Every outcome is written into its plan; act
// fails only when it could not record credentials.
func (ps *Pass) act(ctx context.Context, rt Runtime, plans []*SporePlan, obs observation) error {
	var starts, stops []*SporePlan
	for _, p := range plans {
		switch {
		case p.Start:
			starts = append(starts, p)
		case p.Stop:
			stops = append(stops, p)
		}
	}
	creds, err := ps.issue(ctx, starts)
	if err != nil {
		return err
	}
	run := func(list []*SporePlan, fn func(p *SporePlan)) {
		ids := make([]string, len(list))
		byID := make(map[string]*SporePlan, len(list))
		for i, p := range list {
			ids[i], byID[p.Spore.ID] = p.Spore.ID, p
		}
		forEach(ctx, ids, startWorkers, func(id string) { fn(byID[id]) })
	}
	run(starts, func(p *SporePlan) {
		is, ok := creds[p.Spore.ID]
		if !ok {
			p.StartErr = fmt.Errorf("deleted before it could start: %w", state.SporeNotFound(p.Spore.ID))
			return
		}
		p.issued = is
		if err := rt.Start(ctx, p.Spore, is); err != nil {
			p.StartErr = err
		}
	})
	run(stops, func(p *SporePlan) {
		// Woken since the snapshot: the newer wish wins, nothing is ended.
		if err := ps.Store.View(ctx, func(tx state.Tx) error {
			sp, err := tx.Spore(ctx, p.Spore.ID)
			if err == nil && sp.Desired == state.Running && p.Spore.Desired != state.Running {
				return errWishChanged
			}
			return err
		}); err != nil {
			p.StopErr = err
			return
		}
		p.StopErr = rt.Stop(ctx, p.Spore.ID)
	})

	var deliver []*SporePlan
	for _, p := range plans {
		if len(p.Deliver) > 0 {
			deliver = append(deliver, p)
		}
	}
	var mu sync.Mutex
	run(deliver, func(p *SporePlan) {
		c := obs.clients[p.Spore.ID]
		for _, e := range p.Deliver {
			a, err := c.Prompt(ctx, bridge.PromptRequest{ID: e.ID, From: e.From, Text: e.Text})
			mu.Lock()
			p.Delivered = append(p.Delivered, Delivery{Entry: e, Position: a.Position, Duplicate: a.Duplicate, Err: err})
			mu.Unlock()
			if err != nil {
				// Order matters: what follows waits for the next pass.
				return
			}
		}
	})
	return nil
}

// issued are the credentials made for one start: the runtime asks for
// them only if it really starts the spore (used), and the store's token
// hash before ours (prev) is kept so the commit can put it back when the
// runtime found the spore running (started by a racing command) and our
// hash would name a token nobody holds.
type issued struct {
	creds Credentials
	hash  state.TokenHash
	prev  state.TokenHash
	used  atomic.Bool
	// exists re-checks, when the runtime is about to start the spore
	// (locally under its start lock), that it is still in the store: a
	// `delete` that committed meanwhile wins, and nothing starts for a
	// spore that is gone.
	exists func(ctx context.Context) error
}

func (i *issued) Credentials(ctx context.Context) (Credentials, error) {
	if i.exists != nil {
		if err := i.exists(ctx); err != nil {
			return Credentials{}, err
		}
	}
	i.used.Store(true)
	return i.creds, nil
}

// issue makes credentials for every spore about to start and commits
// their token hashes in one transaction, before any start: the store
// always knows the token a spore got. A spore deleted meanwhile gets
// none (and is not started).
func (ps *Pass) issue(ctx context.Context, starts []*SporePlan) (map[string]*issued, error) {
	if len(starts) == 0 {
		return nil, nil
	}
	out := make(map[string]*issued, len(starts))
	for _, p := range starts {
		c, h, err := NewCredentials()
		if err != nil {
			return nil, err
		}
		id := p.Spore.ID
		out[id] = &issued{creds: c, hash: h, exists: func(ctx context.Context) error {
			return ps.Store.View(ctx, func(tx state.Tx) error {
				sp, err := tx.Spore(ctx, id)
				if err == nil && sp.Desired != state.Running {
					// Put to sleep since the snapshot: the newer wish wins.
					return errWishChanged
				}
				return err
			})
		}}
	}
	err := ps.Store.Update(ctx, func(tx state.Tx) error {
		for id, is := range out {
			prev, err := tx.TokenHash(ctx, id)
			if err != nil && !errors.Is(err, state.ErrNotFound) {
				return err
			}
			err = tx.SetTokenHash(ctx, id, is.hash)
			if errors.Is(err, state.ErrNotFound) {
				delete(out, id)
				continue
			}
			if err != nil {
				return err
			}
			is.prev = prev
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("record tokens of spores to start: %w", err)
	}
	return out, nil
}
