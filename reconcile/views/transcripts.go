package views

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
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

// fileStamp is what readStamp read of one transcript.
type fileStamp struct {
	s   stamp
	ok  bool
	err error
}

// transcriptPath is the transcript of spore id, relative to the views.
func transcriptPath(id string) string { return filepath.Join(TranscriptsDir, id+".md") }

// readStamp reads the stamp of the transcript at p; ok is false when the
// file is missing or does not start with a stamp this version wrote.
func readStamp(p string) (s stamp, ok bool, err error) {
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return stamp{}, false, nil
	}
	if err != nil {
		return stamp{}, false, fmt.Errorf("read view %s: %w", p, err)
	}
	defer f.Close()
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
// read-only transaction, so that a no-op projection costs one snapshot and
// one event per spore, not one snapshot per spore.
func (d *Dir) transcripts(ctx context.Context, c *changes, st state.Store, res reconcile.Result, scope Scope) error {
	var errs []error
	keep := map[string]bool{}
	spores := sorted(res)
	// The stamps first, read on every core: in a fleet at rest they are
	// all a projection reads, a file each.
	stamps := make([]fileStamp, len(spores))
	parallel.For(len(spores), 256, func(i int) {
		if state.ValidateID(spores[i].ID) == nil {
			st := &stamps[i]
			st.s, st.ok, st.err = readStamp(filepath.Join(c.root, transcriptPath(spores[i].ID)))
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
			if err := d.transcript(ctx, c, tx, s, stamps[i]); err != nil {
				errs = append(errs, err)
			}
		}
		return nil
	})
	errs = append(errs, err)
	if scope == Full && err == nil {
		errs = append(errs, removeDeleted(c, keep))
	}
	return errors.Join(errs...)
}

// transcript renders one spore's transcript when its stamp is not that
// of the pass's result: a different last seq, or another creation time
// (the spore was deleted and created again under the same id). An
// unchanged one costs the read of its first line (have, read before),
// and nothing of the store.
func (d *Dir) transcript(ctx context.Context, c *changes, tx state.Tx, s reconcile.SporeHealth, have fileStamp) error {
	rel := transcriptPath(s.ID)
	old, ok := have.s, have.ok
	if have.err != nil {
		return have.err
	}
	if ok && old == stampOf(s.LastSeq, s.Created) {
		return nil
	}
	b, err := d.render(ctx, tx, s)
	if errors.Is(err, state.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("transcript of %s: %w", s.ID, err)
	}
	// The file's stamp is not the one the pass asked for; unless it is
	// the one rendered (the log fell short of the pass's last seq), the
	// bytes differ, and the file need not be read to say so.
	if ok && bytes.HasPrefix(b, []byte(old.String())) {
		return c.put(rel, b)
	}
	return c.replace(rel, b)
}

// render reads the spore's log a page at a time, up to the pass's last
// seq (what fleet.json says), and renders it after its stamp.
func (d *Dir) render(ctx context.Context, tx state.Tx, s reconcile.SporeHealth) ([]byte, error) {
	var md bytes.Buffer
	w := transcript.NewMarkdown(&md, s.ID)
	var lastSeq uint64
	for after := uint64(0); after < s.LastSeq; {
		evs, err := tx.Events(ctx, s.ID, after, d.pageSize())
		if err != nil {
			return nil, err
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
			return nil, err
		}
		last := evs[len(evs)-1]
		lastSeq, after = last.Seq, last.Seq
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return append([]byte(stampOf(lastSeq, s.Created).String()), md.Bytes()...), nil
}

// removeDeleted removes the transcripts of spores not in keep. Only files
// named <valid id>.md are considered; anything else in the directory is
// left alone.
func removeDeleted(c *changes, keep map[string]bool) error {
	dir := filepath.Join(c.root, TranscriptsDir)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("list transcripts in %s: %w", dir, err)
	}
	var errs []error
	for _, e := range ents {
		id, isMD := strings.CutSuffix(e.Name(), ".md")
		if !isMD || !e.Type().IsRegular() || state.ValidateID(id) != nil || keep[id] {
			continue
		}
		errs = append(errs, c.remove(filepath.Join(TranscriptsDir, e.Name())))
	}
	return errors.Join(errs...)
}
