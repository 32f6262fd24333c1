package server

import (
	"container/list"
	"context"
	"net"
	"sync"
	"syscall"
)

// DefaultMaxConns is how many connections a bridge holds open at most
// (less when half its open-file limit is less). Its callers are a few
// sporectl commands, `chat --follow` long-polls and a prober.
const DefaultMaxConns = 256

// defaultMaxConns is DefaultMaxConns, or half the open-file limit when
// that is smaller, so connections alone never exhaust the bridge's files.
func defaultMaxConns() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur/2 >= DefaultMaxConns {
		return DefaultMaxConns
	}
	return max(int(lim.Cur/2), 8)
}

// connLimiter caps the connections a bridge holds. At the cap, a new
// connection takes the place of the least recently useful one that is not
// being served: one still sending its headers, an idle keep-alive, or one
// that had an answer without the token. Connections are kept in the order
// they last finished a request (or were accepted); a connection being
// served for an authenticated request (a long-poll, say) is never closed
// to make room, so at worst a new connection waits until one is free.
//
// So however many connections a client opens, the bridge holds at most
// max of them, and a client that sends a request promptly (a prober, a
// sporectl command) gets in: nobody can hold a place without completing
// requests, and nobody without the token can hold one by being served.
type connLimiter struct {
	net.Listener
	max int

	mu     sync.Mutex
	cond   *sync.Cond
	conns  list.List // of *limitedConn, least recently useful first
	closed bool
}

func newConnLimiter(ln net.Listener, max int) *connLimiter {
	l := &connLimiter{Listener: ln, max: max}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// limitedConn is one held connection. Its fields are guarded by l.mu.
type limitedConn struct {
	net.Conn
	l       *connLimiter
	elem    *list.Element // nil once it no longer counts
	serving bool          // a handler runs for it
	trusted bool          // and that request carried the token
}

func (l *connLimiter) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	lc := &limitedConn{Conn: c, l: l}
	l.mu.Lock()
	for l.conns.Len() >= l.max && !l.closed {
		v := l.victimLocked()
		if v == nil {
			// Every place serves an authenticated request: wait for one.
			l.cond.Wait()
			continue
		}
		l.dropLocked(v)
		l.mu.Unlock()
		_ = v.Conn.Close()
		l.mu.Lock()
	}
	if l.closed {
		l.mu.Unlock()
		_ = c.Close()
		return nil, net.ErrClosed
	}
	lc.elem = l.conns.PushBack(lc)
	l.mu.Unlock()
	return lc, nil
}

// victimLocked is the connection to close for a new one: the least
// recently useful one not being served, else the least recently useful
// one being served without the token, else none.
func (l *connLimiter) victimLocked() *limitedConn {
	var untrusted *limitedConn
	for e := l.conns.Front(); e != nil; e = e.Next() {
		c := e.Value.(*limitedConn)
		if !c.serving {
			return c
		}
		if !c.trusted && untrusted == nil {
			untrusted = c
		}
	}
	return untrusted
}

func (l *connLimiter) dropLocked(c *limitedConn) {
	if c.elem != nil {
		l.conns.Remove(c.elem)
		c.elem = nil
		l.cond.Broadcast()
	}
}

func (l *connLimiter) Close() error {
	l.mu.Lock()
	l.closed = true
	l.cond.Broadcast()
	l.mu.Unlock()
	return l.Listener.Close()
}

// open is how many connections are held; busy how many are being served
// for an authenticated request (tests).
func (l *connLimiter) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conns.Len()
}

func (l *connLimiter) busy() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for e := l.conns.Front(); e != nil; e = e.Next() {
		if c := e.Value.(*limitedConn); c.serving && c.trusted {
			n++
		}
	}
	return n
}

func (c *limitedConn) Close() error {
	c.l.mu.Lock()
	c.l.dropLocked(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// CloseWrite lets the HTTP server half-close, as it does on a bare TCP
// connection before closing one whose request body it did not read.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// begin and end bracket a handler.
func (c *limitedConn) begin() {
	c.l.mu.Lock()
	c.serving, c.trusted = true, false
	c.l.mu.Unlock()
}

// trust marks the request being served as authenticated.
func (c *limitedConn) trust() {
	c.l.mu.Lock()
	c.trusted = true
	c.l.mu.Unlock()
}

// end: the connection finished a request, the most recently useful now.
func (c *limitedConn) end() {
	c.l.mu.Lock()
	c.serving, c.trusted = false, false
	if c.elem != nil {
		c.l.conns.MoveToBack(c.elem)
		c.l.cond.Broadcast()
	}
	c.l.mu.Unlock()
}

type connKey struct{}

// connOf is the held connection a request came on, nil when the handler
// is served another way (httptest).
func connOf(ctx context.Context) *limitedConn {
	c, _ := ctx.Value(connKey{}).(*limitedConn)
	return c
}
