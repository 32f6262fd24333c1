package views

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sporectl/sporectl/internal/parallel"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/transcript"
	"github.com/sporectl/sporectl/state"
)

// transcriptFormat is the version in each transcript's first line; raising
// it makes the next projection render every transcript again (do so when
// the transcript package changes what it writes).
//
// Version 2 stamps the spore's creation time instead of its last event's,
// so that an unchanged transcript costs no read of the log.
const transcriptFormat = 2

// stamp is the first line of a transcript: which events of which spore it
// was rendered from. A projection renders a spore's transcript again only
// when its stamp no longer matches the pass's result (docs/views.md
// "Transcripts").
type stamp struct {
	format  int
	lastSeq uint64
	// created is the spore's creation time, RFC 3339 in UTC: a spore
	// deleted and created again under its id has another.
	created string
}

const stampPrefix = "<!-- sporectl transcript "

func (s stamp) String() string {
	return fmt.Sprintf("%sv%d last_seq=%d created=%s; rebuilt from the store's event log, edits are lost -->\n",
		stampPrefix, s.format, s.lastSeq, s.created)
}

func stampOf(lastSeq uint64, created time.Time) stamp {
	return stamp{format: transcriptFormat, lastSeq: lastSeq, created: created.UTC().Format(time.RFC3339Nano)}
}

// fileStamp is what a projection found of one transcript: the stamp it
// starts with (ok false when none, or no file) and which file that is.
type fileStamp struct {
	s   stamp
	ok  bool
	id  fileID
	err error
}

// transcriptPath is the transcript of spore id, relative to the views.
func transcriptPath(id string) string { return filepath.Join(TranscriptsDir, id+".md") }

// stampAt is the stamp of the transcript at p: the one the stamps file
// recorded (known) when p is still that file, which costs one lstat, else
// what its first line says.
func stampAt(p string, recorded transcriptStamp, known bool) fileStamp {
	if known && isFile(p, recorded.id) {
		return fileStamp{s: recorded.s, ok: true, id: recorded.id}
	}
	var fst fileStamp
	fst.s, fst.ok, fst.id, fst.err = readStamp(p)
	return fst
}

// readStamp reads the stamp of the transcript at p, and which file it
// read; ok is false when the file is missing or does not start with a
// stamp this version wrote.
func readStamp(p string) (s stamp, ok bool, id fileID, err error) {
	f, id, err := openID(p)
	if errors.Is(err, fs.ErrNotExist) {
		return stamp{}, false, fileID{}, nil
	}
	if err != nil {
		return stamp{}, false, fileID{}, fmt.Errorf("read view %s: %w", p, err)
	}
	defer f.Close()
	s, ok, err = parseStampOf(f, p)
	return s, ok, id, err
}

// parseStampOf reads the first line of the transcript f (at p).
func parseStampOf(f io.Reader, p string) (s stamp, ok bool, err error) {
	head := make([]byte, 256)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return stamp{}, false, fmt.Errorf("read view %s: %w", p, err)
	}
	line, _, found := bytes.Cut(head[:n], []byte("\n"))
	if !found || !bytes.HasPrefix(line, []byte(stampPrefix)) {
		return stamp{}, false, nil
	}
	fields := strings.Fields(strings.TrimPrefix(string(line), stampPrefix))
	if len(fields) < 3 || !strings.HasPrefix(fields[0], "v") {
		return stamp{}, false, nil
	}
	s.format, err = strconv.Atoi(fields[0][1:])
	if err != nil {
		return stamp{}, false, nil
	}
	v, cut := strings.CutPrefix(fields[1], "last_seq=")
	if s.lastSeq, err = strconv.ParseUint(v, 10, 64); !cut || err != nil {
		return stamp{}, false, nil
	}
	if s.created, cut = strings.CutPrefix(strings.TrimSuffix(fields[2], ";"), "created="); !cut {
		return stamp{}, false, nil
	}
	return s, true, nil
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
	keep := map[string]bool{}
	spores := sorted(res)
	// The stamps first, checked on every core: in a fleet at rest they
	// are all a projection looks at, an lstat each.
	stamps := make([]fileStamp, len(spores))
	parallel.For(len(spores), 256, func(i int) {
		if id := spores[i].ID; state.ValidateID(id) == nil {
			recorded, known := old.transcripts[id]
			stamps[i] = stampAt(filepath.Join(c.root, transcriptPath(id)), recorded, known)
		}
	})
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

// transcript renders one spore's transcript when its stamp is not that
// of the pass's result: a different last seq, or another creation time
// (the spore was deleted and created again under the same id), and
// returns the stamp it rendered (nil when it rendered none). An unchanged
// one costs what finding its stamp did (have, found before), and nothing
// of the store.
func (d *Dir) transcript(ctx context.Context, c *changes, tx state.Tx, s reconcile.SporeHealth, have fileStamp) (*stamp, error) {
	rel := transcriptPath(s.ID)
	old, ok := have.s, have.ok
	if have.err != nil {
		return nil, have.err
	}
	if ok && old == stampOf(s.LastSeq, s.Created) {
		return nil, nil
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

// render reads the spore's log a page at a time, up to the pass's last
// seq (what fleet.json says), and renders it after its stamp, which it
// returns too.
func (d *Dir) render(ctx context.Context, tx state.Tx, s reconcile.SporeHealth) ([]byte, stamp, error) {
	var md bytes.Buffer
	w := transcript.NewMarkdown(&md, s.ID)
	var lastSeq uint64
	for after := uint64(0); after < s.LastSeq; {
		evs, err := tx.Events(ctx, s.ID, after, d.pageSize())
		if err != nil {
			return nil, stamp{}, err
		}
		if len(evs) == 0 {
			break
		}
		for i, ev := range evs {
			if ev.Seq > s.LastSeq {
				evs = evs[:i]
				break
			}
		}
		if len(evs) == 0 {
			break
		}
		if err := w.Events(evs); err != nil {
			return nil, stamp{}, err
		}
		last := evs[len(evs)-1]
		lastSeq, after = last.Seq, last.Seq
	}
	if err := w.Close(); err != nil {
		return nil, stamp{}, err
	}
	made := stampOf(lastSeq, s.Created)
	return append([]byte(made.String()), md.Bytes()...), made, nil
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
