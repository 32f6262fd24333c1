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

// act carries out the plan: starts and stops in parallel (each start's
// token hash committed when the runtime asks for its credentials, before
// any plaintext leaves this process), then deliveries. Every outcome is
// written into its plan; act fails only when it could not make
// credentials or read which spores still exist.
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
		l := Launch{Creds: is}
		if ps.Identity != nil {
			l.Identity = ps.Identity(p.Spore)
		}
		if err := rt.Start(ctx, p.Spore, l); err != nil {
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
			dead := ""
			if err != nil {
				dead = undeliverable(err)
			}
			mu.Lock()
			p.Delivered = append(p.Delivered, Delivery{Entry: e, Position: a.Position, Duplicate: a.Duplicate, Err: err, Dead: dead})
			mu.Unlock()
			if err != nil && dead == "" {
				// Order matters: what follows waits for the next pass. An
				// entry refused for good does not hold it up: the commit
				// makes it a dead letter (deadletter.go).
				return
			}
		}
	})
	return nil
}

// issued are the credentials made for one start. Their hash reaches the
// store only when the runtime asks for them, that is when it really
// starts the spore, under what serialises its starts (locally the spore's
// start lock), and before the plaintext leaves this process: the store
// then always holds the hash of the token the spore's running bridge got.
//
// The hash used to be committed for every planned start before any of
// them, with the hash it replaced kept to put back when the runtime found
// the spore running (a racing command had started it). Passes that lost
// such a race put back hashes in the order of their commits, not of their
// issues, and one could put back another loser's hash: the spore then ran
// with a token the store did not know ("stored hash and the spore's token
// disagree", TestConcurrentWakes), and until then every racing pass's
// hash locked the running spore out for the length of its pass.
type issued struct {
	creds Credentials
	hash  state.TokenHash
	used  atomic.Bool
	// ranBefore: the store held a token hash for the spore when the pass
	// issued this one, so it has been started before (RanBefore).
	ranBefore bool
	// commit records hash as the spore's token, in a transaction (shared
	// with the starts asking at the same time: tokenCommits) that
	// re-checks the spore first: a `delete` or `sleep` that committed
	// meanwhile wins, and nothing starts for a spore that is gone or no
	// longer wished running.
	commit func(ctx context.Context, hash state.TokenHash) error
}

// RanBefore says a token was recorded for the spore before this start:
// it has run, so what a runtime made for it most likely exists still (a
// sleeping spore keeps its home). A runtime may ask for those objects as
// they most likely are (kube, start_wake.go); it is a hint, never a
// reason to skip a check.
func (i *issued) RanBefore() bool { return i.ranBefore }

func (i *issued) Credentials(ctx context.Context) (Credentials, error) {
	if err := i.commit(ctx, i.hash); err != nil {
		return Credentials{}, err
	}
	i.used.Store(true)
	return i.creds, nil
}

// issue makes credentials for every spore about to start that the store
// still has (one read for all: a spore deleted since the snapshot gets
// none and is not started, so no runtime makes a home for it), and notes
// which had a token already (issued.RanBefore). Nothing is
// written here: each start commits its own hash when the runtime asks for
// its credentials (see issued), in a transaction it shares with the
// starts asking at the same time (tokenCommits).
func (ps *Pass) issue(ctx context.Context, starts []*SporePlan) (map[string]*issued, error) {
	if len(starts) == 0 {
		return nil, nil
	}
	out := make(map[string]*issued, len(starts))
	tokens := newTokenCommits(ps.Store)
	for _, p := range starts {
		c, h, err := NewCredentials()
		if err != nil {
			return nil, err
		}
		id := p.Spore.ID
		out[id] = &issued{creds: c, hash: h, commit: func(ctx context.Context, hash state.TokenHash) error {
			return tokens.commit(ctx, id, hash)
		}}
	}
	err := ps.Store.View(ctx, func(tx state.Tx) error {
		for id, is := range out {
			_, err := tx.Spore(ctx, id)
			if errors.Is(err, state.ErrNotFound) {
				delete(out, id)
				continue
			}
			if err != nil {
				return err
			}
			_, err = tx.TokenHash(ctx, id)
			switch {
			case err == nil:
				is.ranBefore = true
			case !errors.Is(err, state.ErrNotFound):
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read spores to start: %w", err)
	}
	return out, nil
}
