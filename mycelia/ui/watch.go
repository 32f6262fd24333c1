package ui

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Changes is a store that can say when a spore's log may have grown: the
// PostgreSQL store by LISTEN/NOTIFY, the directory store by watching its
// commit log. Handler finds it by asserting Store to it.
type Changes interface {
	// Watch sends the id of each spore whose log may have grown, or ""
	// when it cannot tell which (after a gap, such as a reconnect, in
	// which it may have missed some), until ctx ends or it fails for
	// good; then it closes the channel. A send may be spurious, never
	// missing: a reader that wakes reads the store and finds out.
	Watch(ctx context.Context) (<-chan string, error)
}

// Timing of the live tails.
const (
	// SafetyPoll is how often a live tail reads the store when nothing
	// woke it, while a Changes source wakes it: a net under a missed
	// notification (a listener that was reconnecting), not the way lines
	// arrive.
	SafetyPoll = 10 * time.Second
	// watchRetry bounds the wait before a failed Watch is started again.
	watchRetry = 5 * time.Second
)

// liveHub is the Handler's one watcher of the store, shared by all its live
// tails (watch.go). Its zero value finds its source in Handler.Store.
type liveHub struct {
	// src, when set, is the source instead of Handler.Store (tests).
	src Changes

	once sync.Once
	hub  *hub // nil: the store cannot say when it changed
}

// hub returns the Handler's hub, or nil when its store is no Changes.
func (h *Handler) hub() *hub {
	h.live.once.Do(func() {
		src := h.live.src
		if src == nil {
			src, _ = h.Store.(Changes)
		}
		if src != nil {
			h.live.hub = newHub(src, h.logger())
		}
	})
	return h.live.hub
}

// hub wakes the subscribers of a spore when its log may have grown. It
// runs one Watch of the store while anyone is subscribed, and stops it
// when the last one leaves; each subscriber then reads the store from its
// own position, so the hub holds no events and a slow reader delays no
// other.
type hub struct {
	src Changes
	log *slog.Logger

	mu   sync.Mutex
	subs map[string]map[*subscription]struct{}
	n    int                // subscriptions
	stop context.CancelFunc // ends the running watch; nil when none runs
	done chan struct{}      // closed when the running watch's loop has ended
}

// subscription is one live tail's interest in one spore. Wake has room
// for one signal: wakes that come while its reader is busy merge.
type subscription struct {
	id   string
	Wake chan struct{}
}

func newHub(src Changes, log *slog.Logger) *hub {
	return &hub{src: src, log: log, subs: map[string]map[*subscription]struct{}{}}
}

// subscribe registers interest in spore id; the caller must call cancel.
// Subscribing before reading the store means no growth after that read
// is missed.
func (b *hub) subscribe(id string) (s *subscription, cancel func()) {
	s = &subscription{id: id, Wake: make(chan struct{}, 1)}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.subs[id] == nil {
		b.subs[id] = map[*subscription]struct{}{}
	}
	b.subs[id][s] = struct{}{}
	b.n++
	if b.n == 1 {
		// The watch outlives the request that started it: it lasts while
		// anyone is subscribed.
		ctx, stop := context.WithCancel(context.Background())
		b.stop, b.done = stop, make(chan struct{})
		go b.run(ctx, b.done)
	}
	var once sync.Once
	return s, func() { once.Do(func() { b.unsubscribe(s) }) }
}

func (b *hub) unsubscribe(s *subscription) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.subs[s.id], s)
	if len(b.subs[s.id]) == 0 {
		delete(b.subs, s.id)
	}
	b.n--
	if b.n == 0 {
		b.stop()
		b.stop = nil
	}
}

// idle waits until no watch runs (tests: every goroutine of the hub ended).
func (b *hub) idle(ctx context.Context) error {
	b.mu.Lock()
	done := b.done
	b.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run watches the store until ctx ends, starting Watch again (after a
// pause that grows to watchRetry) whenever it fails. Each watch, the
// first included, wakes everyone once it is established: changes may
// have come meanwhile — before the first, between a subscriber's first
// read and the moment the store began to listen.
func (b *hub) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	delay := 100 * time.Millisecond
	for ctx.Err() == nil {
		ch, err := b.src.Watch(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			b.log.Warn("ui: cannot watch the store; live tails poll it until this recovers", "every", SafetyPoll, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(delay):
			}
			delay = min(2*delay, watchRetry)
			continue
		}
		b.wake("")
		delay = 100 * time.Millisecond
		for id := range ch {
			b.wake(id)
		}
		if ctx.Err() != nil {
			return
		}
		b.log.Warn("ui: the store's watch ended; starting it again")
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
	}
}

// wake signals the subscribers of spore id, or all of them for "".
func (b *hub) wake(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	signal := func(set map[*subscription]struct{}) {
		for s := range set {
			select {
			case s.Wake <- struct{}{}:
			default:
			}
		}
	}
	if id != "" {
		signal(b.subs[id])
		return
	}
	for _, set := range b.subs {
		signal(set)
	}
}
