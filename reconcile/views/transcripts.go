package views

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"path/filepath"
	"strings"

	"github.com/sporectl/sporectl/internal/parallel"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/transcript"
	"github.com/sporectl/sporectl/state"
)

// fileStamp is what a projection found of one transcript: the stamp it
// ends with (ok false when none, no file, or a file the stamp does not
// describe) and which file that is.
type fileStamp struct {
	s   stamp
	ok  bool
	id  fileID
	err error
}

// transcriptPath is the transcript of spore id, relative to the views.
func transcriptPath(id string) string { return filepath.Join(TranscriptsDir, id+".md") }

// stampAt is the stamp of the transcript name in dir: the one the stamps
// file recorded (known) when it is still that file, which costs one
// lstat, else the one it ends with, when the file is what that stamp
// describes (readStamp).
func stampAt(dir *statDir, name string, recorded transcriptStamp, known bool) fileStamp {
	if known && dir.isFile(name, recorded.id) {
		return fileStamp{s: recorded.s, ok: true, id: recorded.id}
	}
	var fst fileStamp
	fst.s, fst.ok, fst.id, fst.err = readStamp(filepath.Join(dir.path, name))
	return fst
}

// transcripts projects the transcript of every spore in res, and on a full
// pass removes those of spores no longer in it. All reads happen in one
// read-only transaction, so that a projection costs one snapshot, not one
// per spore. It notes in next the stamps of the transcripts found
// unchanged (on a full pass dropping those of spores no longer there),
// and in rendered those of the ones written (known once they are renamed
// into place).
func (d *Dir) transcripts(ctx context.Context, c *changes, st state.Store, res reconcile.Result, scope Scope, old, next stamps, rendered map[string]stamp) error {
	var errs []error
	keep := make(map[string]bool, len(res.Spores))
	spores := sorted(res)
	// The stamps first, checked on every core: in a fleet at rest they
	// are all a projection looks at, an lstat each.
	stamps := make([]fileStamp, len(spores))
	dir := openStatDir(filepath.Join(c.root, TranscriptsDir))
	parallel.For(len(spores), 256, func(i int) {
		if id := spores[i].ID; state.ValidateID(id) == nil {
			recorded, known := old.transcripts[id]
			stamps[i] = stampAt(dir, id+".md", recorded, known)
		}
	})
	dir.Close()
	err := st.View(ctx, func(tx state.Tx) error {
		for i, s := range spores {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := state.ValidateID(s.ID); err != nil {
				// Never a path: an id that is not one cannot name a file.
				errs = append(errs, fmt.Errorf("transcript skipped: %w", err))
				continue
			}
			keep[s.ID] = true
			var made *stamp
			var err error
			if s.Code != reconcile.ReasonStoreDamage {
				made, err = d.transcript(ctx, c, tx, s, stamps[i])
			}
			if _, damaged := state.SporeDamage(err); damaged {
				// Its stored data does not read: the transcript it had
				// stays as it was (a view, never the truth) until a
				// repair, and the other spores' are written; the pass
				// and check name the damage.
				made, err = nil, nil
			}
			switch {
			case err != nil:
				errs = append(errs, err)
			case made != nil:
				rendered[s.ID] = *made
			case stamps[i].ok:
				next.transcripts[s.ID] = transcriptStamp{s: stamps[i].s, id: stamps[i].id}
			}
		}
		return nil
	})
	errs = append(errs, err)
	if scope == Full && err == nil {
		errs = append(errs, removeDeleted(c, keep))
		maps.DeleteFunc(next.transcripts, func(id string, _ transcriptStamp) bool { return !keep[id] })
	}
	return errors.Join(errs...)
}

// transcript brings one spore's transcript to the pass's result, and
// returns the stamp it wrote (nil when it wrote none). An unchanged one
// costs what finding its stamp did (have, found before), and nothing of
// the store. One that holds a prefix of the log (the same spore, an
// older last seq) has the events after it appended (extend), which costs
// what they are, not the history. Any other (no file, another format,
// another creation time, a log rewritten, a newer last seq than the
// pass's) is rendered whole and replaces the file.
func (d *Dir) transcript(ctx context.Context, c *changes, tx state.Tx, s reconcile.SporeHealth, have fileStamp) (*stamp, error) {
	rel := transcriptPath(s.ID)
	old, ok := have.s, have.ok
	if have.err != nil {
		return nil, have.err
	}
	if ok && old.covers(s.LastSeq, s.Created) {
		return nil, nil
	}
	if ok && old.format == transcriptFormat && old.created == createdOf(s.Created) && old.lastSeq > 0 && old.lastSeq < s.LastSeq {
		made, err := d.extend(ctx, c, tx, s, have)
		switch {
		case errors.Is(err, state.ErrNotFound):
			return nil, nil
		case errors.Is(err, errRewrite):
			// Rendered whole, below.
		case err != nil:
			return nil, fmt.Errorf("transcript of %s: %w", s.ID, err)
		default:
			return made, nil
		}
	}
	b, made, err := d.render(ctx, tx, s)
	if errors.Is(err, state.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("transcript of %s: %w", s.ID, err)
	}
	// The file's stamp is not the one the pass asked for; unless it is
	// the one rendered (the log fell short of the pass's last seq), the
	// bytes differ, and the file need not be read to say so.
	if ok && old == made {
		return &made, c.put(rel, b)
	}
	return &made, c.replace(rel, b)
}

// errRewrite says a transcript cannot be appended to: the log no longer
// holds what it was rendered from, or the file is no longer the one its
// stamp was read from. It is rendered whole instead.
var errRewrite = errors.New("transcript must be rendered whole")

// repairedAction is the lifecycle event a repair of a spore's log records
// (issue 35's `sporectl repair`): lines before it may have been moved
// aside, so a transcript that meets it is rendered whole.
const repairedAction = "repaired"

// extend appends to the transcript have describes the events after its
// last seq, up to the pass's, in place: it reads the log from the
// transcript's last event on (which must still be the one its stamp
// names), renders the new events from the state the stamp keeps, and
// writes them with the new closing and stamp over the old ones. It
// returns the stamp written, nil when the log holds nothing new.
func (d *Dir) extend(ctx context.Context, c *changes, tx state.Tx, s reconcile.SporeHealth, have fileStamp) (*stamp, error) {
	old := have.s
	var md bytes.Buffer
	w := transcript.ContinueMarkdown(&md, old.state())
	made := old
	first := true
	for after := old.lastSeq - 1; after < s.LastSeq; {
		evs, err := tx.Events(ctx, s.ID, after, d.pageSize())
		if err != nil {
			return nil, err
		}
		if first {
			if len(evs) == 0 || evs[0].Seq != old.lastSeq || eventDigest(evs[0]) != old.last {
				return nil, errRewrite
			}
			first, after, evs = false, old.lastSeq, evs[1:]
			if len(evs) == 0 {
				continue
			}
		}
		if evs = upTo(evs, s.LastSeq); len(evs) == 0 {
			break
		}
		for _, ev := range evs {
			if ev.Kind == state.KindLifecycle && ev.Action == repairedAction {
				return nil, errRewrite
			}
		}
		if err := w.Events(evs); err != nil {
			return nil, err
		}
		last := evs[len(evs)-1]
		made.lastSeq, made.last, after = last.Seq, eventDigest(last), last.Seq
	}
	if made.lastSeq == old.lastSeq {
		return nil, nil
	}
	made.body += int64(md.Len())
	made.crc = crc32.Update(old.crc, castagnoli, md.Bytes())
	made.open = w.State().Open
	if err := w.Close(); err != nil {
		return nil, err
	}
	md.WriteString(made.String())
	if err := c.appendAt(transcriptPath(s.ID), old.body, md.Bytes(), have.id); err != nil {
		if errors.Is(err, errMoved) {
			return nil, errRewrite
		}
		return nil, err
	}
	return &made, nil
}

// upTo is evs without the events after seq last.
func upTo(evs []state.Event, last uint64) []state.Event {
	for i, ev := range evs {
		if ev.Seq > last {
			return evs[:i]
		}
	}
	return evs
}

// render reads the spore's log a page at a time, up to the pass's last
// seq (what fleet.json says), and renders it before its stamp, which it
// returns too.
func (d *Dir) render(ctx context.Context, tx state.Tx, s reconcile.SporeHealth) ([]byte, stamp, error) {
	var md bytes.Buffer
	w := transcript.NewMarkdown(&md, s.ID)
	made := stamp{format: transcriptFormat, created: createdOf(s.Created), last: "-"}
	for after := uint64(0); after < s.LastSeq; {
		evs, err := tx.Events(ctx, s.ID, after, d.pageSize())
		if err != nil {
			return nil, stamp{}, err
		}
		if evs = upTo(evs, s.LastSeq); len(evs) == 0 {
			break
		}
		if err := w.Events(evs); err != nil {
			return nil, stamp{}, err
		}
		last := evs[len(evs)-1]
		made.lastSeq, made.last, after = last.Seq, eventDigest(last), last.Seq
	}
	if err := w.Flush(); err != nil {
		return nil, stamp{}, err
	}
	made.body = int64(md.Len())
	made.crc = crc32.Checksum(md.Bytes(), castagnoli)
	made.open = w.State().Open
	if err := w.Close(); err != nil {
		return nil, stamp{}, err
	}
	md.WriteString(made.String())
	return md.Bytes(), made, nil
}

// removeDeleted removes the transcripts of spores not in keep. Only files
// named <valid id>.md are considered; anything else in the directory is
// left alone.
func removeDeleted(c *changes, keep map[string]bool) error {
	dir := filepath.Join(c.root, TranscriptsDir)
	names, err := listNames(dir)
	if err != nil {
		return fmt.Errorf("list transcripts in %s: %w", dir, err)
	}
	var errs []error
	for _, name := range names {
		id, isMD := strings.CutSuffix(name, ".md")
		if !isMD || keep[id] || state.ValidateID(id) != nil || !isRegular(filepath.Join(dir, name)) {
			continue
		}
		errs = append(errs, c.remove(filepath.Join(TranscriptsDir, name)))
	}
	return errors.Join(errs...)
}
