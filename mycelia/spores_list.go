package mycelia

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// DefaultSporesShare is how long one fleet read of GET /api/spores (its
// read-only pass over the whole fleet and every last event) serves the
// lists asked after it.
const DefaultSporesShare = time.Second

// sporesFleet is the whole fleet as one read-only pass saw it, with each
// spore's last event: what every GET /api/spores within SporesShare of it
// answers from, each caller's reach taken from it (listFor). It holds the
// pass's records, for reach, and each spore's row as the list shows it,
// in the pass's order (by id); nothing of any caller.
type sporesFleet struct {
	recs []state.Spore
	rows []SporeInfo

	// answers are the lists encoded, by what decides a caller's reach:
	// the callers of one reach within SporesShare share its bytes too.
	mu      sync.Mutex
	answers map[reachKey]encodedJSON
}

// reachKey is what Reaches reads of a caller.
type reachKey struct {
	id, colony, swarm string
	rank              state.Rank
}

func (s *Server) sporesShare() time.Duration {
	if s.SporesShare != 0 {
		return max(s.SporesShare, 0)
	}
	return DefaultSporesShare
}

// sporesFleet returns the fleet read running now, else the last one
// while it is younger than SporesShare, else a new one: one pass for the
// lists of every caller that asks meanwhile (internal/share's rule).
func (s *Server) sporesFleet(ctx context.Context) (*sporesFleet, error) {
	return s.fleet.Get(ctx, s.sporesShare(), s.readSporesFleet)
}

// readSporesFleet runs one read-only pass over the whole fleet (its
// snapshot is the one read of the records: reach is decided on them) and
// reads every last event in one more read (one query on PostgreSQL); a
// spore deleted since the pass is left out of that read and shows no
// time.
func (s *Server) readSporesFleet(ctx context.Context) (*sporesFleet, error) {
	out, err := s.Pass.Run(ctx, reconcile.Options{})
	if err != nil {
		return nil, err
	}
	recs := make(map[string]*state.Spore, len(out.Plans))
	for _, p := range out.Plans {
		recs[p.Spore.ID] = &p.Spore
	}
	ids := make([]string, 0, len(out.Spores))
	for _, sh := range out.Spores {
		ids = append(ids, sh.ID)
	}
	var last map[string]state.Event
	err = s.Store.View(ctx, func(tx state.Tx) error {
		var err error
		last, err = tx.LastEvents(ctx, ids)
		// A spore whose log's end does not read is listed without its
		// last event (its row names its damage once a pass judged it).
		_, err = state.Damaged(err)
		return err
	})
	if err != nil {
		return nil, err
	}
	f := &sporesFleet{recs: make([]state.Spore, 0, len(out.Spores)), rows: make([]SporeInfo, 0, len(out.Spores))}
	for _, sh := range out.Spores {
		rec, ok := recs[sh.ID]
		if !ok {
			// Every row of a pass has its plan; one without is shown
			// to no one rather than judged on less than its record.
			continue
		}
		f.recs = append(f.recs, *rec)
		f.rows = append(f.rows, SporeInfo{
			ID: sh.ID, Colony: sh.Colony, Rank: string(sh.Rank), Swarm: sh.Swarm, Role: sh.Role,
			Desired: string(sh.Desired), Effective: string(sh.Effective), Reason: sh.Reason,
			Activity: string(sh.Observed.Activity), LastSeq: sh.LastSeq, LastEventAt: last[sh.ID].At, Pending: sh.Pending,
		})
	}
	return f, nil
}

// answerFor is listFor(caller) encoded, once per reach for every caller
// that shares f.
func (f *sporesFleet) answerFor(caller state.Spore) (encodedJSON, error) {
	k := reachKey{id: caller.ID, colony: caller.Colony, swarm: caller.Swarm, rank: caller.Rank}
	f.mu.Lock()
	defer f.mu.Unlock()
	if b, ok := f.answers[k]; ok {
		return b, nil
	}
	b, err := json.Marshal(f.listFor(caller))
	if err != nil {
		return nil, fmt.Errorf("encode the spores in the reach of %s: %w", caller.ID, err)
	}
	if f.answers == nil {
		f.answers = map[reachKey]encodedJSON{}
	}
	f.answers[k] = append(b, '\n')
	return f.answers[k], nil
}

// listFor is the rows of f that caller reaches (Reaches, on the records
// the pass read), in f's order.
func (f *sporesFleet) listFor(caller state.Spore) SporeList {
	list := SporeList{Spores: []SporeInfo{}}
	for i := range f.recs {
		if reaches(&caller, &f.recs[i]) {
			list.Spores = append(list.Spores, f.rows[i])
		}
	}
	return list
}
