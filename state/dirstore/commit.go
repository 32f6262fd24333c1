package dirstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/sporectl/sporectl/state"
)

const tornDir = "torn"

// recover runs under the write lock before a transaction (format §6): it
// drops a torn tail of the commit log — after copying it to torn/ so that
// nothing is lost even if it was something else — and removes commit logs
// a finished compaction left behind.
func (s *Store) recover(ctx context.Context) (*loaded, error) {
	l, err := s.loadState(ctx)
	if err != nil {
		return nil, err
	}
	return s.repair(l)
}

// repair is recover's work on a state already loaded: l must be the
// latest state, read under the write lock.
func (s *Store) repair(l *loaded) (*loaded, error) {
	if err := s.removeStaleLogs(l.m.gen); err != nil {
		return nil, err
	}
	if l.torn == "" {
		return l, nil
	}
	name := txlogName(l.m.gen)
	p := s.path(name)
	f, err := openFile(p, name, os.O_RDWR, true)
	if err != nil {
		return nil, storeErr("recover commit log", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, ioErr("recover commit log", err)
	}
	if fi.Size() > l.logOff {
		tail := make([]byte, fi.Size()-l.logOff)
		if n, err := f.ReadAt(tail, l.logOff); n < len(tail) {
			return nil, ioErr("recover commit log", err)
		}
		keep, err := s.saveTorn(name+"."+strconv.FormatInt(l.logOff, 10), tail)
		if err != nil {
			return nil, err
		}
		s.opts.Logger.Warn("dropped torn tail of commit log", "file", name, "offset", l.logOff, "bytes", len(tail), "saved", rel(s.root, keep), "why", l.torn)
	}
	if err := f.Truncate(l.logOff); err != nil {
		return nil, ioErr("recover commit log", err)
	}
	if err := syncFile(f); err != nil {
		return nil, ioErr("recover commit log", err)
	}
	n := *l
	n.torn = ""
	s.mu.Lock()
	s.cache = &n
	s.mu.Unlock()
	return &n, nil
}

// saveTorn keeps a torn tail under torn/ as a new file (never through a
// link, never over an earlier one) and returns its path.
func (s *Store) saveTorn(base string, data []byte) (string, error) {
	p, err := s.saveAside(tornDir, base, data)
	if err != nil {
		return "", fmt.Errorf("save torn tail of %s: %w", base, err)
	}
	return p, nil
}

// saveAside keeps data under the store's directory dir (torn/, damaged/)
// as a new file named base (or base.1, base.2, … when taken), never
// through a link and never over an earlier file, durably (the file and
// the directory fsync'd), and returns its path.
func (s *Store) saveAside(dir, base string, data []byte) (string, error) {
	if err := os.Mkdir(s.path(dir), 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", ioErr("make "+dir, err)
	}
	if err := checkDir(s.path(dir), dir); err != nil {
		return "", storeErr("make "+dir, err)
	}
	for k := 0; ; k++ {
		name := base
		if k > 0 {
			name += "." + strconv.Itoa(k)
		}
		p := s.path(dir, name)
		f, err := createFile(p, dir+"/"+name)
		if errors.Is(err, fs.ErrExist) && k < 1000 {
			continue
		}
		if err != nil {
			return "", storeErr("create "+dir+"/"+name, err)
		}
		_, err = f.Write(data)
		if err == nil {
			err = syncFile(f)
		}
		f.Close()
		if err == nil {
			err = syncDir(s.path(dir))
		}
		if err != nil {
			return "", ioErr("write "+dir+"/"+name, err)
		}
		return p, nil
	}
}

// removeStaleLogs removes commit logs older than gen. Only regular files
// are removed; anything else by that name is left for check to report.
func (s *Store) removeStaleLogs(gen uint64) error {
	entries, err := os.ReadDir(s.root)
	if err != nil {
		return ioErr("list store", err)
	}
	removed := false
	for _, e := range entries {
		g, ok := parseTxlogName(e.Name())
		if ok && g < gen && e.Type().IsRegular() {
			if err := os.Remove(s.path(e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return ioErr("remove old commit log", err)
			}
			removed = true
		}
	}
	if removed {
		if err := syncDir(s.root); err != nil {
			return ioErr("remove old commit log", err)
		}
	}
	return nil
}

func parseTxlogName(name string) (uint64, bool) {
	if !strings.HasPrefix(name, txlogPrefix) {
		return 0, false
	}
	g, err := strconv.ParseUint(name[len(txlogPrefix):], 10, 64)
	return g, err == nil
}

// logWrite is one event log a commit appends to.
type logWrite struct {
	name      string // events/<file>, for errors
	f         *os.File
	committed int64 // its committed size before this transaction
	size      int64 // its size when opened
	buf       []byte
	created   bool
}

// commit makes t durable in the order of format §5:
//  0. check every file it will touch, before it writes anything: event
//     logs and events/ are no links, logs are at least their committed size;
//  1. append each spore's new event lines past its committed size, fsync;
//  2. fsync events/ if a log file was created;
//  3. append the transaction record to the commit log, fsync — the commit
//     point: before it the transaction is invisible, after it complete;
//  4. record it in the commit log's header (no fsync);
//  5. remove logs of deleted spores and, once per handle, every event log
//     no row names; compact if the commit log is large.
func (s *Store) commit(ctx context.Context, l *loaded, t *tx) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	rec := t.record()
	// The commit log is opened first, so that one the writer may not
	// write to fails the transaction before any event log is touched.
	name := txlogName(l.m.gen)
	cf, err := openFile(s.path(name), name, os.O_RDWR, true)
	if err != nil {
		return storeErr("open commit log", err)
	}
	defer cf.Close()
	// mustSweep: a writer may have left a log no row names (the marker is
	// there), so this commit lists events/; without the marker the handle
	// knows there is none and never lists it.
	mustSweep := false
	if !s.swept {
		there, err := s.unsweptExists()
		if err != nil {
			return ioErr("commit", err)
		}
		mustSweep, s.swept = there, !there
	}
	logs, marked, err := s.prepareLogs(t, rec)
	defer func() {
		for _, w := range logs {
			w.f.Close()
		}
	}()
	if err != nil {
		return err
	}
	// withdrawn: nothing of this transaction is visible, so the logs it
	// created can go (their names carry its id, which no committed row
	// can name). Left behind only when the commit record could not be
	// cut back, or by a crash: then the next sweep removes them.
	withdrawn := true
	defer func() {
		if err == nil {
			return
		}
		for _, w := range logs {
			if w.created && withdrawn {
				if rerr := os.Remove(w.f.Name()); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
					s.swept = false
				}
			} else if w.created {
				s.swept = false
			}
		}
		// Still swept: there was nothing left before this transaction
		// and it took back all it made.
		if marked && s.swept {
			s.clearUnswept()
		}
	}()
	created := false
	for _, w := range logs {
		if err := w.write(); err != nil {
			return err
		}
		created = created || w.created
	}
	failpoint("events-written")
	if created {
		if err := syncDir(s.path(eventsDir)); err != nil {
			return ioErr("commit", err)
		}
	}
	line, err := encodeTxRecord(rec)
	if err != nil {
		return err
	}
	head := logHeader{Log: l.m.gen, Base: l.m.base, TX: rec.TxID, End: l.logOff + int64(len(line))}
	if withdrawn, err = s.appendCommit(cf, l.logOff, line, head); err != nil {
		return err
	}
	m := l.m.clone()
	m.applyInPlace(rec)
	n := &loaded{m: m, snapInfo: l.snapInfo, logOff: l.logOff + int64(len(line)), logLines: l.logLines + 1, headed: true}
	s.publish(n)

	// The transaction is committed; what follows only tidies up, so its
	// failures are logged, not returned.
	for _, ref := range t.removed {
		if p, _, err := s.logPath(ref.id, ref.file); err == nil {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				s.opts.Logger.Warn("could not remove event log of deleted spore", "file", ref.file, "err", err)
				s.swept = false
			}
		}
	}
	if !s.swept || mustSweep {
		s.sweepLogs(m)
	}
	if s.swept && (marked || mustSweep) {
		s.clearUnswept()
	}
	if n.logOff >= s.compactThreshold(n) || t.compact {
		if err := s.compact(n); err != nil {
			s.opts.Logger.Warn("compaction failed; the commit log keeps growing until one succeeds", "err", err)
		}
	}
	return nil
}

// prepareLogs is step 0 of commit: it opens every event log the
// transaction appends to, and looks at every one it removes, so that a
// link or a log shorter than its committed size fails the transaction
// before anything is written. New logs are created here (and removed again
// if the transaction fails). marked: the transaction may create a log or
// removes one, and the sweep marker was made first (unswept.go).
func (s *Store) prepareLogs(t *tx, rec *txRecord) (_ []*logWrite, marked bool, _ error) {
	var ids []string
	creates := false
	for id, p := range t.pending {
		if r := rec.Rows[id]; r != nil && len(p.buf) > 0 {
			ids = append(ids, id)
			creates = creates || p.committed.Size == 0
		}
	}
	if len(ids) == 0 && len(t.removed) == 0 {
		return nil, false, nil
	}
	if err := checkDir(s.path(eventsDir), eventsDir); err != nil {
		return nil, false, storeErr("commit", err)
	}
	for _, ref := range t.removed {
		p, name, err := s.logPath(ref.id, ref.file)
		if err != nil {
			return nil, false, err
		}
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, false, ioErr("commit", err)
		}
		if err := checkRegular(name, fi, false); err != nil {
			return nil, false, err
		}
	}
	if creates || len(t.removed) > 0 {
		if err := s.markUnswept(len(t.removed) > 0); err != nil {
			return nil, false, err
		}
		marked = true
	}
	slices.Sort(ids)
	var logs []*logWrite
	fail := func(err error) ([]*logWrite, bool, error) {
		for _, w := range logs {
			if w.created {
				_ = os.Remove(w.f.Name())
			}
		}
		return logs, marked, err
	}
	for _, id := range ids {
		p := t.pending[id]
		w, err := s.openLog(id, rec.Rows[id].Log.File, p.committed.Size)
		if err != nil {
			return fail(err)
		}
		w.buf = p.buf
		logs = append(logs, w)
	}
	return logs, marked, nil
}

// openLog opens an event log to append to it at its committed end,
// creating it when nothing of it is committed yet.
func (s *Store) openLog(id, file string, committed int64) (*logWrite, error) {
	p, name, err := s.logPath(id, file)
	if err != nil {
		return nil, err
	}
	w := &logWrite{name: name, committed: committed}
	f, err := openFile(p, name, os.O_RDWR, true)
	if errors.Is(err, fs.ErrNotExist) {
		if committed != 0 {
			return nil, &state.CorruptError{File: name, Offset: 0, Reason: fmt.Sprintf("event log is missing but %d bytes of it are committed", committed)}
		}
		f, err = createFile(p, name)
		w.created = true
	}
	if err != nil {
		return nil, storeErr("open event log", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, ioErr("open event log", err)
	}
	if fi.Size() < committed {
		f.Close()
		return nil, &state.CorruptError{File: name, Offset: fi.Size(), Reason: fmt.Sprintf("event log has %d bytes but %d are committed", fi.Size(), committed)}
	}
	w.f, w.size = f, fi.Size()
	return w, nil
}

// write puts w.buf at the committed end of the log. Bytes past that end
// are a crashed transaction's and are cut first. On failure the file is
// cut back, so nothing uncommitted lingers.
func (w *logWrite) write() error {
	if w.size > w.committed {
		if err := w.f.Truncate(w.committed); err != nil {
			return ioErr("drop uncommitted tail of event log", err)
		}
	}
	if _, err := writeAt(w.f, w.buf, w.committed); err != nil {
		_ = w.f.Truncate(w.committed)
		return ioErr("append events", err)
	}
	if err := syncFile(w.f); err != nil {
		_ = w.f.Truncate(w.committed)
		return ioErr("fsync events", err)
	}
	return nil
}

// sweepLogs removes every event log that no committed row names: left by a
// delete whose cleanup did not run (a crash, an error), by a create that
// failed and could not clean up, or by a transaction that crashed after
// creating a log (format §4). It runs under the write lock, with m the
// state just committed, so a log that a committed row names is never
// removed, and the only create that can be in flight — this writer's — is
// done. Only regular files named like event logs are removed; anything
// else is left for check to report. Its cost is a listing of events/: it
// runs on a handle's first commit and after each compaction, never more.
func (s *Store) sweepLogs(m *model) {
	// Every row's log name: the whole snapshot, read once.
	if _, err := m.snapContent(); err != nil {
		s.opts.Logger.Warn("could not read the snapshot to remove unused event logs", "err", err)
		return
	}
	entries, err := os.ReadDir(s.path(eventsDir))
	if err != nil {
		s.opts.Logger.Warn("could not list event logs to remove unused ones", "err", err)
		return
	}
	ok := true
	removed := 0
	for _, e := range entries {
		id, _, isLog := parseLogName(e.Name())
		if !isLog || !e.Type().IsRegular() {
			continue
		}
		if file, live, _ := m.logFile(id); live && file == e.Name() {
			continue
		}
		if err := os.Remove(s.path(eventsDir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.opts.Logger.Warn("could not remove an event log no spore names", "file", e.Name(), "err", err)
			ok = false
			continue
		}
		removed++
	}
	if removed > 0 {
		s.opts.Logger.Info("removed event logs no spore names", "count", removed)
	}
	s.swept = ok
}

// The commit log is compacted once it is larger than the snapshot, but
// at least minCompactBytes and at most maxCompactBytes (format §7).
//
// minCompactBytes keeps small stores from compacting at every commit.
// maxCompactBytes bounds what every command pays to load the state: it
// decodes the whole log, record by record, while it reads only the rows
// it names of the snapshot (format §9). A log that grew to the snapshot's
// size cost a command about one spore at 10,000 spores ten times what it
// cost at 1,000; bounded, it costs the same at any size. The price is a
// compaction every maxCompactBytes of log however large the snapshot,
// which at 10,000 spores costs about what one command paid to decode a
// log grown to the snapshot's size (no row is decoded; the lines are
// written back as read): once per several hundred commits of one row,
// against every command. Variables so that tests can compact small
// stores.
var (
	minCompactBytes int64 = 64 << 10
	maxCompactBytes int64 = 256 << 10
)

func (s *Store) compactThreshold(l *loaded) int64 {
	return compactAt(s.opts.CompactBytes, l.snapInfo.Size())
}

// compactAt is the commit-log size at which a store whose snapshot has
// snap bytes is compacted; set, when not zero, is Options.CompactBytes.
func compactAt(set, snap int64) int64 {
	if set > 0 {
		return set
	}
	return min(maxCompactBytes, max(minCompactBytes, snap))
}

// appendCommit writes the transaction's record at off, the end of the last
// good record, fsyncs it (the commit point) and then records it in the
// header. withdrawn says that on failure nothing of the record is left.
func (s *Store) appendCommit(f *os.File, off int64, line []byte, head logHeader) (withdrawn bool, err error) {
	if _, err := writeAt(f, line, off); err != nil {
		// A partial record would be a torn tail anyway; cutting it now
		// keeps the store exactly as it was.
		terr := f.Truncate(off)
		return terr == nil, ioErr("commit", err)
	}
	failpoint("commit-written")
	if err := syncFile(f); err != nil {
		terr := f.Truncate(off)
		return terr == nil, ioErr("commit", err)
	}
	failpoint("committed")
	if err := writeHeader(f, head); err != nil {
		// Committed all the same: the header only lags behind (the other
		// slot still holds the previous commit).
		s.opts.Logger.Warn("could not record the commit in the commit log's header", "file", txlogName(head.Log), "tx", head.TX, "err", err)
	}
	failpoint("head-written")
	return false, nil
}

// compact folds the commit log into a new snapshot (format §7):
//  1. create txlog.<gen+1> holding only its header, fsync it and the
//     directory;
//  2. write state.json for gen+1 by rename, fsync the directory — from now
//     on readers and writers use txlog.<gen+1>;
//  3. remove txlog.<gen>; then remove event logs no row names.
//
// A crash after 1 leaves an unused log; after 2, a stale old log that the
// next writer removes. Neither loses or duplicates a transaction.
func (s *Store) compact(l *loaded) error {
	next := l.m.gen + 1
	name := txlogName(next)
	p := s.path(name)
	// What an interrupted compaction left is removed, not written into;
	// a newer log that holds more than a header is not ours to remove.
	if fi, err := os.Lstat(p); err == nil {
		if err := checkRegular(name, fi, false); err != nil {
			return err
		}
		if fi.Size() > headerSize {
			return &state.CorruptError{File: name, Offset: 0, Reason: fmt.Sprintf("commit log newer than the snapshot (gen %d) holds %d bytes", l.m.gen, fi.Size())}
		}
		if err := os.Remove(p); err != nil {
			return ioErr("compact", err)
		}
	}
	f, err := createFile(p, name)
	if err != nil {
		return storeErr("compact", err)
	}
	_, err = writeAt(f, newHeader(next, l.m.txid), 0)
	if err == nil {
		err = syncFile(f)
	}
	f.Close()
	if err != nil {
		return ioErr("compact", err)
	}
	if err := syncDir(s.root); err != nil {
		return ioErr("compact", err)
	}
	failpoint("compact-log-created")
	m := l.m.clone()
	m.gen, m.base, m.format = next, m.txid, formatVersion
	if err := writeSnapshot(s.root, m); err != nil {
		return err
	}
	failpoint("compact-snapshot-written")
	fi, err := os.Lstat(s.path(snapshotFile))
	if err != nil {
		return ioErr("compact", err)
	}
	s.mu.Lock()
	s.cache = &loaded{m: m, snapInfo: fi, logOff: headerSize, logLines: headerLines, headed: true}
	s.mu.Unlock()
	if err := s.removeStaleLogs(next); err != nil {
		return err
	}
	s.sweepLogs(m)
	return nil
}
