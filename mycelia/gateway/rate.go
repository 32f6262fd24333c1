package gateway

import (
	"sync"
	"time"
)

// limiter is each spore's bucket of model calls: rate calls a minute,
// as many at once, refilled evenly. It lives in one serve process, so
// each replica allows a spore its rate (docs/gateway.md): it protects
// the key's upstream quota from a spore gone wild, not to the call.
type limiter struct {
	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time // when tokens was last brought up to date
}

func newLimiter() *limiter { return &limiter{buckets: map[string]*bucket{}} }

// take takes one call of id's bucket at now: true, or false and how long
// until one is there.
func (l *limiter) take(id string, rate int, now time.Time) (time.Duration, bool) {
	per := time.Minute / time.Duration(rate) // one call's refill
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[id]
	if b == nil {
		l.forget(now)
		b = &bucket{tokens: float64(rate), at: now}
		l.buckets[id] = b
	}
	if el := now.Sub(b.at); el > 0 {
		b.tokens = min(float64(rate), b.tokens+float64(el)/float64(per))
		b.at = now
	}
	if b.tokens < 1 {
		return time.Duration((1 - b.tokens) * float64(per)), false
	}
	b.tokens--
	return 0, true
}

// forget drops the buckets full again (idle for a minute or more), so
// the map holds the spores calling now, not every spore that ever did.
// It runs only when a bucket is added, and only over a map grown past a
// bound, so a steady fleet pays nothing for it.
func (l *limiter) forget(now time.Time) {
	if len(l.buckets) < 1024 {
		return
	}
	for id, b := range l.buckets {
		if now.Sub(b.at) >= time.Minute {
			delete(l.buckets, id)
		}
	}
}
