package ui

import (
	"context"
	"sync"
	"time"

	"github.com/sporectl/sporectl/reconcile"
)

// DefaultFollowEvery is how often serve takes in the new lines of a spore
// that someone watches live (Handler.FollowEvery).
const DefaultFollowEvery = time.Second

// followTimeout bounds one follow pass, so a hanging bridge delays only
// the next one.
const followTimeout = 10 * time.Second

// follower takes in the lines of the spores this process's live tails
// watch: while at least one tail follows a spore, a read-only reconcile
// pass over that spore alone runs every interval, and so what its bridge
// wrote reaches the store, and from there every watcher in every serve,
// without waiting for a cron `reconcile` (docs/page.md "How new lines
// are pushed"). The pass is the one every read-only command runs
// (ingest, transitions; no start, stop or delivery), safe beside any
// other pass; the process keeps only which spores are watched. Its zero
// value is ready.
type follower struct {
	mu    sync.Mutex
	loops map[string]*followLoop
}

type followLoop struct {
	n      int // tails following
	cancel context.CancelFunc
}

// follow starts following id (or joins the loop that does) and returns
// the function that stops, which the caller must call once.
func (h *Handler) follow(id string) (stop func()) {
	every := h.FollowEvery
	if every == 0 {
		every = DefaultFollowEvery
	}
	if h.Pass == nil || every < 0 {
		return func() {}
	}
	f := &h.followers
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.loops == nil {
		f.loops = map[string]*followLoop{}
	}
	l := f.loops[id]
	if l == nil {
		// The loop outlives the request that started it (it serves every
		// tail of the spore): its life is the last tail's, or serve's.
		ctx, cancel := context.WithCancel(context.Background())
		l = &followLoop{cancel: cancel}
		f.loops[id] = l
		go h.followLoop(ctx, id, every)
	}
	l.n++
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			if l.n--; l.n == 0 {
				l.cancel()
				delete(f.loops, id)
			}
		})
	}
}

// following is how many spores this process follows (tests).
func (h *Handler) following() int {
	h.followers.mu.Lock()
	defer h.followers.mu.Unlock()
	return len(h.followers.loops)
}

func (h *Handler) followLoop(ctx context.Context, id string, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	var stop <-chan struct{}
	if h.Shutdown != nil {
		stop = h.Shutdown.Done()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, followTimeout)
		_, err := h.Pass.Run(pctx, reconcile.Options{IDs: []string{id}})
		cancel()
		if err != nil && ctx.Err() == nil {
			h.logger().Debug("ui: follow pass failed", "spore", id, "err", err)
		}
	}
}
