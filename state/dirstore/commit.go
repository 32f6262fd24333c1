package dirstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, ioErr("recover commit log", err)
	}
	if int64(len(data)) > l.logOff {
		if err := os.MkdirAll(s.path(tornDir), 0o700); err != nil {
			return nil, ioErr("recover commit log", err)
		}
		keep := s.path(tornDir, name+"."+strconv.FormatInt(l.logOff, 10))
		if err := os.WriteFile(keep, data[l.logOff:], 0o600); err != nil {
			return nil, ioErr("save torn tail of "+name, err)
		}
		s.opts.Logger.Warn("dropped torn tail of commit log", "file", name, "offset", l.logOff, "bytes", int64(len(data))-l.logOff, "saved", rel(s.root, keep), "why", l.torn)
	}
	if err := truncateSync(p, l.logOff); err != nil {
		return nil, ioErr("recover commit log", err)
	}
	n := *l
	n.torn = ""
	s.mu.Lock()
	s.cache = &n
	s.mu.Unlock()
	return &n, nil
}

func (s *Store) removeStaleLogs(gen uint64) error {
	entries, err := os.ReadDir(s.root)
	if err != nil {
		return ioErr("list store", err)
	}
	removed := false
	for _, e := range entries {
		g, ok := parseTxlogName(e.Name())
		if ok && g < gen {
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

func truncateSync(p string, size int64) error {
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		return err
	}
	return syncFile(f)
}

// commit makes t durable in the order of format §5:
//  1. append each spore's new event lines past its committed size, fsync;
//  2. fsync events/ if a log file was created;
//  3. append the transaction record to the commit log, fsync — the commit
//     point: before it the transaction is invisible, after it complete;
//  4. remove logs of deleted spores; compact if the commit log is large.
func (s *Store) commit(ctx context.Context, l *loaded, t *tx) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	rec := t.record()
	created := false
	for id, p := range t.pending {
		r := rec.Rows[id]
		if r == nil || len(p.buf) == 0 {
			continue
		}
		c, err := s.appendLog(r.Log.File, p.committed.Size, p.buf)
		if err != nil {
			return err
		}
		created = created || c
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
	name := txlogName(l.m.gen)
	if err := s.appendCommit(name, l.logOff, line); err != nil {
		return err
	}
	failpoint("committed")
	m := l.m.clone()
	m.applyInPlace(rec)
	n := &loaded{m: m, snapInfo: l.snapInfo, logOff: l.logOff + int64(len(line)), logLines: l.logLines + 1}
	s.publish(n)

	// The transaction is committed; what follows only tidies up, so its
	// failures are logged, not returned.
	for _, file := range t.removed {
		if err := os.Remove(s.path(eventsDir, file)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			s.opts.Logger.Warn("could not remove event log of deleted spore", "file", file, "err", err)
		}
	}
	if n.logOff >= s.compactThreshold(n) {
		if err := s.compact(n); err != nil {
			s.opts.Logger.Warn("compaction failed; the commit log keeps growing until one succeeds", "err", err)
		}
	}
	return nil
}

// minCompactBytes keeps small stores from compacting at every commit.
const minCompactBytes = 64 << 10

func (s *Store) compactThreshold(l *loaded) int64 {
	if s.opts.CompactBytes > 0 {
		return s.opts.CompactBytes
	}
	return max(minCompactBytes, l.snapInfo.Size())
}

// appendLog writes buf at the committed end of an event log. Bytes past
// that end are a crashed transaction's and are cut first. On failure the
// file is cut back, so nothing uncommitted lingers.
func (s *Store) appendLog(file string, committed int64, buf []byte) (created bool, err error) {
	p := s.path(eventsDir, file)
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if committed != 0 {
			return false, &state.CorruptError{File: filepath.Join(eventsDir, file), Offset: -1, Reason: fmt.Sprintf("event log is missing but %d bytes of it are committed", committed)}
		}
		f, err = os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
		created = true
	}
	if err != nil {
		return false, ioErr("open event log", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, ioErr("open event log", err)
	}
	switch {
	case fi.Size() < committed:
		return false, &state.CorruptError{File: filepath.Join(eventsDir, file), Offset: fi.Size(), Reason: fmt.Sprintf("event log has %d bytes but %d are committed", fi.Size(), committed)}
	case fi.Size() > committed:
		if err := f.Truncate(committed); err != nil {
			return false, ioErr("drop uncommitted tail of event log", err)
		}
	}
	if _, err := writeAt(f, buf, committed); err != nil {
		_ = f.Truncate(committed)
		return false, ioErr("append events", err)
	}
	if err := syncFile(f); err != nil {
		_ = f.Truncate(committed)
		return false, ioErr("fsync events", err)
	}
	return created, nil
}

func (s *Store) appendCommit(name string, off int64, line []byte) error {
	f, err := os.OpenFile(s.path(name), os.O_RDWR, 0)
	if err != nil {
		return ioErr("open commit log", err)
	}
	defer f.Close()
	if _, err := writeAt(f, line, off); err != nil {
		// A partial record would be a torn tail anyway; cutting it now
		// keeps the store exactly as it was.
		_ = f.Truncate(off)
		return ioErr("commit", err)
	}
	failpoint("commit-written")
	if err := syncFile(f); err != nil {
		_ = f.Truncate(off)
		return ioErr("commit", err)
	}
	return nil
}

// compact folds the commit log into a new snapshot (format §7):
//  1. create an empty txlog.<gen+1> and fsync the directory;
//  2. write state.json for gen+1 by rename, fsync the directory — from now
//     on readers and writers use txlog.<gen+1>;
//  3. remove txlog.<gen>.
//
// A crash after 1 leaves an unused empty log; after 2, a stale old log that
// the next writer removes. Neither loses or duplicates a transaction.
func (s *Store) compact(l *loaded) error {
	next := l.m.gen + 1
	f, err := os.OpenFile(s.path(txlogName(next)), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return ioErr("compact", err)
	}
	err = syncFile(f)
	f.Close()
	if err != nil {
		return ioErr("compact", err)
	}
	if err := syncDir(s.root); err != nil {
		return ioErr("compact", err)
	}
	failpoint("compact-log-created")
	m := l.m.clone()
	m.gen = next
	if err := writeSnapshot(s.root, m); err != nil {
		return err
	}
	failpoint("compact-snapshot-written")
	fi, err := os.Stat(s.path(snapshotFile))
	if err != nil {
		return ioErr("compact", err)
	}
	s.mu.Lock()
	s.cache = &loaded{m: m, snapInfo: fi}
	s.mu.Unlock()
	return s.removeStaleLogs(next)
}
