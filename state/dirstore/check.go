package dirstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/sporectl/sporectl/state"
)

// Check verifies every invariant of format §8 without writing anything.
// It reads without the lock, so a writer may commit meanwhile; a report
// with problems is only believed if nothing was committed while it was
// made. After two such races the last attempt holds the write lock (which
// writes nothing, but makes writers wait) for a stable view.
func (s *Store) Check(ctx context.Context) (*state.CheckReport, error) {
	for attempt := 0; attempt < 2; attempt++ {
		before := s.commitStamp()
		rep, err := s.checkOnce(ctx)
		if err == nil && rep.OK() {
			return rep, nil
		}
		if s.commitStamp() == before {
			return rep, err
		}
	}
	if err := checkLockFile(s.root); err != nil {
		return s.checkOnce(ctx) // reports the lock file; never locks through a link
	}
	lk, err := acquireLock(ctx, s.path(lockFile), s.opts.LockTimeout)
	if err != nil {
		return nil, &state.UnavailableError{Op: "lock store for check", Err: err}
	}
	defer lk.release()
	return s.checkOnce(ctx)
}

// commitStamp changes whenever a transaction commits or a compaction runs:
// the snapshot's identity and the commit logs' sizes.
func (s *Store) commitStamp() string {
	var b strings.Builder
	if fi, err := os.Lstat(s.path(snapshotFile)); err == nil {
		fmt.Fprintf(&b, "%v/%d/%d;", fi.ModTime().UnixNano(), fi.Size(), inode(fi))
	}
	entries, _ := os.ReadDir(s.root)
	for _, e := range entries {
		if _, ok := parseTxlogName(e.Name()); ok {
			if fi, err := e.Info(); err == nil {
				fmt.Fprintf(&b, "%s=%d;", e.Name(), fi.Size())
			}
		}
	}
	return b.String()
}

func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

func (s *Store) checkOnce(ctx context.Context) (*state.CheckReport, error) {
	rep := &state.CheckReport{Problems: []state.Problem{}, Notes: []state.Problem{}}
	problem := func(where, format string, a ...any) {
		rep.Problems = append(rep.Problems, state.Problem{Where: where, Message: fmt.Sprintf(format, a...)})
	}
	note := func(where, format string, a ...any) {
		rep.Notes = append(rep.Notes, state.Problem{Where: where, Message: fmt.Sprintf(format, a...)})
	}
	if err := readFormat(s.root); err != nil {
		var ce *state.CorruptError
		if errors.As(err, &ce) {
			problem(ce.Where(), "%s", ce.Reason)
			return rep, nil
		}
		return nil, err
	}
	// Check reads everything afresh: a cached state would hide damage done
	// to bytes this handle has already read.
	// The whole snapshot too, checked line by line, before anything else.
	var ids []string
	l, err := s.loadUncached(ctx)
	if err == nil {
		ids, err = l.m.ids()
	}
	if err != nil {
		var ce *state.CorruptError
		if errors.As(err, &ce) {
			problem(ce.Where(), "%s", ce.Reason)
			return rep, nil
		}
		return nil, err
	}
	if l.torn != "" {
		note(txlogName(l.m.gen), "torn tail after byte %d (%s): a commit that never finished; the next writer saves it to %s/ and drops it", l.logOff, l.torn, tornDir)
	}
	if l.headNote != "" {
		note(txlogName(l.m.gen), "%s", l.headNote)
	}
	s.checkFiles(l.m, problem, note)
	s.checkStrict(l, problem)
	if err := l.m.settings.Validate(); err != nil {
		problem("settings", "%v", err)
	}

	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		where := "spore " + id
		r, _, err := l.m.get(id)
		if err != nil {
			var c *state.CorruptError
			if errors.As(err, &c) {
				problem(fmt.Sprintf("%s:%d", c.File, c.Line), "%s", c.Reason)
				continue
			}
			return nil, err
		}
		if err := r.Spore.Validate(); err != nil {
			problem(where, "%v", err)
		}
		// The gateway's count keeps one entry per call
		// (state.GatewayRecord.Count): one twice was not written by it.
		counted := map[string]bool{}
		for _, c := range r.Spore.ModelCalls {
			if counted[c.ID] {
				problem(where, "model call %q is counted twice", c.ID)
			}
			counted[c.ID] = true
		}
		seen := map[string]bool{}
		for i, e := range r.Outbox {
			if e.Spore != id {
				problem(where, "outbox entry %d is addressed to %q", i+1, e.Spore)
			}
			if seen[e.ID] {
				problem(where, "outbox entry id %q appears twice", e.ID)
			}
			seen[e.ID] = true
			if err := validateEntry(&e); err != nil {
				problem(where, "outbox entry %d: %v", i+1, err)
			}
			if e.Dead != nil {
				if err := state.CheckDeadLetter(*e.Dead); err != nil {
					problem(where, "outbox entry %d: %v", i+1, err)
				}
			}
		}
		if r.Token != "" && !r.Token.Valid() {
			problem(where, "stored token hash is not a SHA-256 in hex")
		}
		n, err := s.checkLog(id, r.Log, problem, note)
		if err != nil {
			return nil, err
		}
		rep.Events += n
	}
	rep.Spores = len(ids)
	return rep, nil
}

// checkFiles looks for files the model does not account for, and for
// links and other non-files where the store keeps its own files (format
// §1: the store never follows them, so each is a problem).
func (s *Store) checkFiles(m *model, problem, note func(string, string, ...any)) {
	entries, err := os.ReadDir(s.root)
	if err != nil {
		problem(s.root, "cannot list: %v", err)
		return
	}
	for _, e := range entries {
		name := e.Name()
		g, isLog := parseTxlogName(name)
		switch {
		case name == formatFile, name == snapshotFile, name == lockFile, isLog:
			if !e.Type().IsRegular() {
				problem(name, "is not a regular file (%s); the store never follows links among its own files", typeName(e))
				continue
			}
		case name == eventsDir, name == tornDir:
			if !e.IsDir() {
				problem(name, "is not a directory (%s); the store never follows links among its own files", typeName(e))
				continue
			}
		}
		switch {
		case isLog && g < m.gen:
			note(name, "commit log of an earlier snapshot, left by an interrupted compaction; the next writer removes it")
		case isLog && g > m.gen:
			if fi, err := e.Info(); err == nil && fi.Size() > headerSize {
				problem(name, "commit log newer than the snapshot (gen %d) holds %d bytes", m.gen, fi.Size())
			} else {
				note(name, "unused commit log left by an interrupted compaction (no records); the next compaction replaces it")
			}
		case isLog:
			if fi, err := e.Info(); err == nil && links(fi) > 1 {
				problem(name, "has %d hard links; writing to it would change another file too", links(fi))
			}
		case name == tornDir && e.IsDir():
			torn, _ := os.ReadDir(s.path(tornDir))
			for _, t := range torn {
				if !t.Type().IsRegular() {
					problem(tornDir+"/"+t.Name(), "is not a regular file (%s)", typeName(t))
					continue
				}
				note(tornDir+"/"+t.Name(), "torn commit tail saved during recovery; not part of the store")
			}
		case name == damagedDir && e.IsDir():
			kept, _ := os.ReadDir(s.path(damagedDir))
			for _, k := range kept {
				note(damagedDir+"/"+k.Name(), "damaged data set aside by `sporectl repair`; not part of the store")
			}
		}
	}
	if _, err := os.Lstat(s.path(txlogName(m.gen))); err != nil {
		problem(txlogName(m.gen), "live commit log is missing: %v", err)
	}
	if fi, err := os.Lstat(s.path(eventsDir)); err != nil || !fi.IsDir() {
		if err != nil {
			problem(eventsDir, "cannot list: %v", err)
		}
		return
	}
	logs, err := os.ReadDir(s.path(eventsDir))
	if err != nil {
		problem(eventsDir, "cannot list: %v", err)
		return
	}
	for _, e := range logs {
		where := eventsDir + "/" + e.Name()
		id, _, isLog := parseLogName(e.Name())
		file, live, _ := m.logFile(id) // the snapshot is read whole: no error
		named := isLog && live && file == e.Name()
		switch {
		case !e.Type().IsRegular():
			problem(where, "is not a regular file (%s); the store never follows links among its own files", typeName(e))
		case e.Name() == unsweptFile:
			// The sweep marker: the next writer lists events/ (format §4).
		case named:
			// checkLog reads it.
		case isLog:
			note(where, "event log no spore names (a deleted spore's, or a failed or interrupted create's); the next writer removes it")
		default:
			note(where, "not a file of the store (an event log is named <spore id>.<tx>.log); left alone")
		}
	}
}

func typeName(e fs.DirEntry) string {
	if e.Type()&fs.ModeSymlink != 0 {
		return "a symbolic link"
	}
	if e.IsDir() {
		return "a directory"
	}
	return e.Type().String()
}

// checkLog reads a whole event log: lines 1..LastSeq, each well framed,
// ending exactly at the committed size.
func (s *Store) checkLog(id string, h logHead, problem, note func(string, string, ...any)) (uint64, error) {
	p, name, err := s.logPath(id, h.File)
	if err != nil {
		problem("spore "+id, "event log name %q does not belong to it", h.File)
		return 0, nil
	}
	f, err := openFile(p, name, os.O_RDONLY, false)
	if errors.Is(err, os.ErrNotExist) {
		if h.Size > 0 || h.LastSeq > 0 {
			problem(name, "missing, but %d events (%d bytes) are committed", h.LastSeq, h.Size)
		}
		return 0, nil
	}
	var ce *state.CorruptError
	if errors.As(err, &ce) {
		problem(ce.Where(), "%s", ce.Reason)
		return 0, nil
	}
	if err != nil {
		return 0, ioErr("check "+name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, ioErr("check "+name, err)
	}
	if links(fi) > 1 {
		problem(name, "has %d hard links; writing to it would change another file too", links(fi))
	}
	if fi.Size() < h.Size {
		problem(name, "has %d bytes but %d are committed", fi.Size(), h.Size)
		return 0, nil
	}
	if fi.Size() > h.Size {
		note(name, "%d bytes past the committed end (a transaction that never committed); the next append drops them", fi.Size()-h.Size)
	}
	lr := newLineReader(f, 0, h.Size)
	var seq uint64
	var off int64
	for {
		line, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			problem(name+":"+strconv.FormatUint(seq+1, 10), "committed part ends inside a line")
			return seq, nil
		}
		if err != nil {
			return seq, ioErr("check "+name, err)
		}
		off += int64(len(line)) + 1
		e, bad := decodeEventLine(line, seq+1)
		if bad != "" {
			problem(name+":"+strconv.FormatUint(seq+1, 10), "%s", bad)
			return seq, nil
		}
		if !utf8.ValidString(e.Text) {
			problem(name+":"+strconv.FormatUint(seq+1, 10), "text is not valid UTF-8")
		}
		seq++
	}
	if seq != h.LastSeq {
		problem(name, "holds %d events but the store says %d are committed", seq, h.LastSeq)
	}
	return seq, nil
}

// checkStrict decodes every snapshot and commit-log line again refusing
// unknown fields, which the fast decoders ignore: a field this binary does
// not know would be lost when it rewrites the row.
func (s *Store) checkStrict(l *loaded, problem func(string, string, ...any)) {
	scan := func(name string, from, limit int64, firstLine int, decode func(n int, payload []byte) error) {
		data, err := readFileNoFollow(s.path(name), name, -1)
		if err != nil || int64(len(data)) < from {
			return // reported elsewhere
		}
		if limit >= 0 && int64(len(data)) > limit {
			data = data[:limit]
		}
		data = data[from:]
		for n := firstLine; len(data) > 0; n++ {
			nl := bytes.IndexByte(data, '\n')
			if nl < 0 {
				return
			}
			if payload, bad := unframe(data[:nl]); bad == "" {
				if err := decode(n, payload); err != nil {
					problem(name+":"+strconv.Itoa(n), "%v", err)
				}
			}
			data = data[nl+1:]
		}
	}
	scan(snapshotFile, 0, -1, 1, func(n int, p []byte) error {
		if n == 1 {
			return strictUnmarshal(p, new(snapHeader))
		}
		return strictUnmarshal(p, new(rowJSON))
	})
	// The header's slots are decoded strictly when read.
	var from int64
	first := 1
	if l.m.format >= headedFormat {
		from, first = headerSize, headerLines+1
	}
	scan(txlogName(l.m.gen), from, l.logOff, first, func(_ int, p []byte) error { return strictUnmarshal(p, new(txRecordJSON)) })
}
