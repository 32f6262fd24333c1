package dirstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sporectl/sporectl/state"
)

// Options tune a Store; the zero value is the production setting.
type Options struct {
	Logger *slog.Logger
	// LockTimeout bounds how long Update waits for another writer.
	LockTimeout time.Duration
	// CompactBytes, when set, is the commit-log size past which a writer
	// folds it into a new snapshot. Zero means the default policy of
	// format §7: once the log is larger than the snapshot and than 64 KiB,
	// or than 256 KiB whatever the snapshot, so that loading the state
	// costs the same however many transactions came before and however
	// many spores the store holds.
	CompactBytes int64
	// Now is the clock used to stamp events; tests fix it.
	Now func() time.Time
}

// Store is the directory backend.
type Store struct {
	root string
	opts Options

	// wlock is the writer lock inside the process (a semaphore of one,
	// so a waiter can give up when its context ends); flock orders
	// processes.
	wlock chan struct{}

	mu    sync.Mutex
	cache *loaded

	// swept: this handle has removed the event logs no row names (format
	// §4) since it last may have left one. Only touched by the writer.
	swept bool

	// actions remembers, per event log, the message ids FindAction has
	// read (findaction.go), so a long-lived handle reads each line once.
	actions actionCache
}

var _ state.Store = (*Store)(nil)

// loaded is a model with where it was read from, so the next read only
// parses what the commit log gained since.
type loaded struct {
	m        *model
	snapInfo os.FileInfo
	logOff   int64  // end of the last good record in txlog.<gen>
	logLines int    // lines before logOff (the header's and good records)
	torn     string // why bytes past logOff are a torn tail
	// headed: the log's header (format 3 on) was read and logOff is past
	// it; a state read afresh from the snapshot is not headed yet.
	headed bool
	// headNote says a header slot was unreadable (for check).
	headNote string
}

func (o *Options) defaults() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.LockTimeout <= 0 {
		o.LockTimeout = time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Open opens an existing store at root. A missing store is state.ErrNoStore;
// a store of a newer format is a *state.IncompatibleError.
func Open(ctx context.Context, root string, opts Options) (*Store, error) {
	opts.defaults()
	s := newStore(root, opts)
	// The first load checks FORMAT before it reads anything else.
	if _, err := s.load(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// newStore is a handle that has read nothing yet; opts must have their
// defaults.
func newStore(root string, opts Options) *Store {
	return &Store{root: root, opts: opts, wlock: make(chan struct{}, 1)}
}

// Info says what and where the store is.
func (s *Store) Info() state.Info {
	return state.Info{Backend: "dir", Location: s.root, FormatVersion: formatVersion}
}

// Close releases nothing: between calls a dir store holds open only the
// snapshot whose rows it finds one by one (snapRows), which is closed
// once read whole or when no model uses it any more.
func (s *Store) Close() error { return nil }

// View runs fn over the latest committed state without taking any lock.
func (s *Store) View(ctx context.Context, fn func(state.Tx) error) error {
	m, err := s.load(ctx)
	if err != nil {
		return err
	}
	return fn(newTx(s, m, false))
}

// Update runs fn as the only writer and commits what it wrote (format §5).
func (s *Store) Update(ctx context.Context, fn func(state.Tx) error) error {
	if err := s.lockWriter(ctx); err != nil {
		return err
	}
	defer func() { <-s.wlock }()
	if err := checkLockFile(s.root); err != nil {
		return err
	}
	lk, err := acquireLock(ctx, filepath.Join(s.root, lockFile), s.opts.LockTimeout)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return &state.UnavailableError{Op: "lock store for writing", Err: err}
	}
	defer lk.release()
	if err := readFormat(s.root); err != nil {
		return err
	}
	l, err := s.recover(ctx)
	if err != nil {
		return err
	}
	t := newTx(s, l.m, true)
	if err := fn(t); err != nil {
		return err
	}
	if !t.dirty() {
		return nil
	}
	return s.commit(ctx, l, t)
}

// lockWriter takes the in-process writer lock, waiting until it is free
// or ctx ends; a free lock is taken even when ctx has ended (the next step
// that looks at ctx refuses then).
func (s *Store) lockWriter(ctx context.Context) error {
	select {
	case s.wlock <- struct{}{}:
		return nil
	default:
	}
	select {
	case s.wlock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return &state.UnavailableError{Op: "wait for the store's writer lock", Err: ctx.Err()}
	}
}

// load returns the latest committed model. A compaction may remove the
// commit log between our reading the snapshot and opening the log; the
// new snapshot then holds everything, so we simply read again.
func (s *Store) load(ctx context.Context) (*model, error) {
	l, err := s.loadState(ctx)
	if err != nil {
		return nil, err
	}
	return l.m, nil
}

func (s *Store) loadState(ctx context.Context) (*loaded, error) {
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		l, err := s.tryLoad()
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, errRaced) || attempt >= 50 {
			return nil, err
		}
	}
}

var errRaced = errors.New("store compacted while reading; read again")

// loadUncached is loadState without the cache.
func (s *Store) loadUncached(ctx context.Context) (*loaded, error) {
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		l, err := s.loadFresh()
		if err == nil || !errors.Is(err, errRaced) || attempt >= 50 {
			return l, err
		}
	}
}

func (s *Store) tryLoad() (*loaded, error) {
	s.mu.Lock()
	c := s.cache
	s.mu.Unlock()
	if c == nil {
		return s.loadFresh()
	}
	fi, err := os.Lstat(filepath.Join(s.root, snapshotFile))
	if err != nil {
		return nil, ioErr("read snapshot", err)
	}
	if os.SameFile(fi, c.snapInfo) && fi.ModTime().Equal(c.snapInfo.ModTime()) {
		return s.extend(c)
	}
	return s.loadFresh()
}

// loadFresh reads the state from disk without the cache, re-checking the
// FORMAT file, since a handle may live across an upgrade.
func (s *Store) loadFresh() (*loaded, error) {
	if err := readFormat(s.root); err != nil {
		return nil, err
	}
	m, snapInfo, err := readSnapshot(s.root)
	if err != nil {
		return nil, err
	}
	// Event logs are opened by name under events/: it must be the store's
	// own directory, not a link to somewhere else (format §1).
	if err := checkDir(s.path(eventsDir), eventsDir); err != nil {
		return nil, storeErr("read store", err)
	}
	base := &loaded{m: m, snapInfo: snapInfo}
	l, err := s.extend(base)
	if err != nil {
		return nil, err
	}
	return l, nil
}

// extend reads what the live commit log holds past c and returns the
// newer state (c itself when nothing was added). Since format 3 it checks
// the records it reads against the log's header, read first: a writer
// rewrites the header only after the records it counts are written, so
// what the header counts is always in the file when the reader looks.
func (s *Store) extend(c *loaded) (*loaded, error) {
	name := txlogName(c.m.gen)
	f, err := openFile(s.path(name), name, os.O_RDONLY, false)
	if errors.Is(err, fs.ErrNotExist) {
		// Either a compaction replaced the snapshot since we read it (read
		// again), or the live log is gone while its snapshot is current:
		// that is damage.
		fi, serr := os.Lstat(filepath.Join(s.root, snapshotFile))
		if serr == nil && c.snapInfo != nil && os.SameFile(fi, c.snapInfo) {
			return nil, &state.CorruptError{File: name, Offset: 0, Reason: fmt.Sprintf("the live commit log is missing (%s names generation %d)", snapshotFile, c.m.gen)}
		}
		return nil, errRaced
	}
	if err != nil {
		return nil, storeErr("read commit log", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, ioErr("read commit log", err)
	}
	headed := c.m.format >= headedFormat
	if c.headed || !headed {
		if fi.Size() < c.logOff {
			// A writer whose fsync failed withdrew its record after we read
			// it (format §5): that transaction was never acknowledged.
			// Forget what we cached and read afresh (which also checks the
			// header, so a log cut short is not taken for this).
			s.mu.Lock()
			if s.cache == c {
				s.cache = nil
			}
			s.mu.Unlock()
			return nil, errRaced
		}
		if fi.Size() == c.logOff && c.torn == "" {
			return c, nil
		}
	}
	from, lines := c.logOff, c.logLines
	var head logHeader
	headNote := c.headNote
	if headed {
		if head, headNote, err = readLogHeader(f, name, c.m.gen, c.m.base); err != nil {
			return nil, err
		}
		if !c.headed {
			from, lines = headerSize, headerLines
		}
		// The size after the header: every record it counts is in it.
		if fi, err = f.Stat(); err != nil {
			return nil, ioErr("read commit log", err)
		}
		if fi.Size() < from {
			return nil, errRaced // withdrawn, as above
		}
	}
	data := make([]byte, fi.Size()-from)
	if _, err := f.ReadAt(data, from); err != nil {
		return nil, ioErr("read commit log", err)
	}
	sc, err := parseTxlog(name, data, c.m.txid, lines+1, c.m.format)
	if err != nil {
		return nil, err
	}
	if headed {
		if err := checkHeader(name, head, from, c.m.txid, sc, lines+sc.lines+1); err != nil {
			return nil, err
		}
	}
	n := &loaded{m: c.m, snapInfo: c.snapInfo, logOff: from + sc.good, logLines: lines + sc.lines, torn: sc.torn, headed: true, headNote: headNote}
	if len(sc.records) > 0 {
		m := c.m.clone()
		for _, rec := range sc.records {
			m.applyInPlace(rec)
		}
		n.m = m
	}
	s.publish(n)
	return n, nil
}

// publish caches l unless a newer state is cached already.
func (s *Store) publish(l *loaded) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cache == nil || l.m.gen > s.cache.m.gen || (l.m.gen == s.cache.m.gen && l.logOff >= s.cache.logOff) {
		s.cache = l
	}
}

func (s *Store) path(parts ...string) string {
	return filepath.Join(append([]string{s.root}, parts...)...)
}
