package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/agent"
	"github.com/sporectl/sporectl/bridge/eventlog"
)

// Config is what a bridge needs.
type Config struct {
	// Home is the spore's home; the bridge keeps its files in
	// Home/.sporectl-bridge and runs the agent there.
	Home  string
	Token string
	Agent agent.Starter
	// Logger gets the bridge's own log; never the token.
	Logger *slog.Logger
	// BackoffBase and BackoffMax shape the wait before restarting an agent
	// that died mid-turn: base·2^(n-1) after the n-th failure in a row.
	BackoffBase, BackoffMax time.Duration
	// MaxAttempts is how many turns one prompt gets before it is dropped
	// (with an event saying so) and the queue goes on.
	MaxAttempts int
	// Now is the clock (tests).
	Now func() time.Time

	// HeaderTimeout bounds the reading of a request's headers, BodyTimeout
	// the reading of its body, WriteTimeout the writing of an answer (a
	// long-poll gets its wait on top). MaxConns caps the connections held
	// open (see connLimiter). Zero means the default: 10 s, 30 s, 30 s,
	// DefaultMaxConns (or half the open-file limit, if that is less).
	HeaderTimeout, BodyTimeout, WriteTimeout time.Duration
	MaxConns                                 int
}

func (c *Config) defaults() {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.BackoffBase == 0 {
		c.BackoffBase = time.Second
	}
	if c.BackoffMax == 0 {
		c.BackoffMax = time.Minute
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 3
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.HeaderTimeout <= 0 {
		c.HeaderTimeout = 10 * time.Second
	}
	if c.BodyTimeout <= 0 {
		c.BodyTimeout = 30 * time.Second
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 30 * time.Second
	}
	if c.MaxConns <= 0 {
		c.MaxConns = defaultMaxConns()
	}
}

// maxHeaderBytes bounds a request's headers; the bridge's callers send a
// few short ones.
const maxHeaderBytes = 64 << 10

// Server is one bridge over one home.
type Server struct {
	cfg   Config
	dir   string
	lock  *os.File
	log   *eventlog.Log
	queue *queue
	out   chan json.RawMessage // lines to number, in order

	appenderDone chan struct{}
	pendingMu    sync.Mutex
	pendingCond  *sync.Cond
	pendingBytes int // bytes emitted and not yet numbered
	closing      atomic.Bool
	// appendGate, when set, is received from before every append to the
	// log: tests hold the log back with it.
	appendGate atomic.Pointer[chan struct{}]

	mu           sync.Mutex
	sess         session
	state        bridge.State
	blocked      bool
	proc         agent.Process
	running      string // prompt id of the running turn
	interrupted  bool
	restarts     int
	failures     int // agent deaths in a row
	backoffUntil time.Time
	appendErr    error
	agentErr     string // why the agent's last start failed; "" once one starts (agentfail.go)

	conns atomic.Pointer[connLimiter] // Run's, for tests
}

// New opens (or creates) the bridge's files in cfg.Home. The caller must
// Close the server.
func New(ctx context.Context, cfg Config) (*Server, error) {
	cfg.defaults()
	if cfg.Token == "" {
		return nil, ErrNoToken
	}
	if cfg.Agent == nil {
		return nil, errors.New("bridge: no agent")
	}
	dir := stateDir(cfg.Home)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	lock, err := lockHome(dir)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, dir: dir, lock: lock, state: bridge.StateStarting,
		out: make(chan json.RawMessage, 4096), appenderDone: make(chan struct{})}
	s.pendingCond = sync.NewCond(&s.pendingMu)
	fail := func(err error) (*Server, error) {
		s.closeFiles()
		return nil, err
	}
	if s.sess, err = loadSession(dir); err != nil {
		return fail(err)
	}
	if s.log, err = eventlog.Open(ctx, filepath.Join(dir, logName), cfg.Logger); err != nil {
		return fail(err)
	}
	if s.queue, err = openQueue(ctx, filepath.Join(dir, queueName), cfg.Logger); err != nil {
		return fail(err)
	}
	go s.appender(context.WithoutCancel(ctx))
	return s, nil
}

// Handler serves the HTTP contract.
func (s *Server) Handler() http.Handler { return s.routes() }

// Run serves HTTP on ln and drives the agent until ctx ends, then stops
// the running turn (its prompt stays queued) and shuts the listener.
//
// It holds at most cfg.MaxConns connections (see connLimiter) and bounds
// the time a client may take to send its headers and body, so that slow
// or idle clients, with or without the token, cannot exhaust the bridge.
func (s *Server) Run(ctx context.Context, ln net.Listener) error {
	lim := newConnLimiter(ln, s.cfg.MaxConns)
	s.conns.Store(lim)
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: s.cfg.HeaderTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    maxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ConnContext:       func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) },
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(lim) }()
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		s.RunAgent(ctx)
	}()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
		err = fmt.Errorf("serve %s: %w", ln.Addr(), err)
	}
	shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(shutCtx)
	<-loopDone
	return err
}

// Close flushes numbered lines and closes the files. Call it after Run
// (or RunAgent) returned.
func (s *Server) Close() error {
	s.closing.Store(true)
	close(s.out)
	<-s.appenderDone
	return s.closeFiles()
}

func (s *Server) closeFiles() error {
	var errs []error
	if s.queue != nil {
		errs = append(errs, s.queue.close())
	}
	if s.log != nil {
		errs = append(errs, s.log.Close())
	}
	if s.lock != nil {
		errs = append(errs, s.lock.Close())
	}
	return errors.Join(errs...)
}

// Status is what GET /v1/status reports.
func (s *Server) Status() bridge.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := bridge.Status{
		State: s.state, SessionID: s.sess.ID, LastSeq: s.log.Last(), Queue: s.queue.len(),
		AgentRestarts: s.restarts, Agent: s.cfg.Agent.Name(), Healthy: s.appendErr == nil, Prompt: s.running,
	}
	if s.state == bridge.StateIdle && s.blocked {
		st.State = bridge.StateBlocked
	}
	if s.proc != nil {
		st.AgentPID = s.proc.PID()
	}
	if s.appendErr != nil {
		st.Error = s.appendErr.Error()
	}
	st.AgentError = s.agentErr
	if s.state == bridge.StateBackoff {
		t := s.backoffUntil.UTC()
		st.BackoffUntil = &t
	}
	return st
}
