package views

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sporectl/sporectl/internal/digest"
	"github.com/sporectl/sporectl/reconcile/transcript"
	"github.com/sporectl/sporectl/state"
)

// transcriptFormat is the version in each transcript's stamp; raising it
// makes the next projection render every transcript again (do so when the
// transcript package changes what it writes).
//
// Version 2 stamped the spore's creation time instead of its last
// event's, so that an unchanged transcript costs no read of the log.
// Version 3 moved the stamp to the end, where an append rewrites it, and
// added what an append needs and what tells a torn one (last, open, body,
// crc32c).
const transcriptFormat = 3

// stamp ends a transcript, a line of its own: which events of which spore it was
// rendered from, and what appending the next ones needs. A projection
// appends a spore's new events when its stamp says the file holds a
// prefix of the log, and renders the transcript again only when it
// cannot (docs/views.md "Transcripts"). Every field is a function of
// the events rendered, so an appended transcript and one rendered whole
// have the same bytes.
type stamp struct {
	format  int
	lastSeq uint64
	// created is the spore's creation time, RFC 3339 in UTC: a spore
	// deleted and created again under its id has another.
	created string
	// last is eventDigest of the event lastSeq ("-" when there is
	// none): a log whose event lastSeq is no longer that one was
	// rewritten, and the transcript is rendered again.
	last string
	// open is transcript.MarkdownState.Open after event lastSeq (its
	// Started is lastSeq > 0).
	open bool
	// body is how many bytes precede the closing (the heading and the
	// events), and crc their CRC-32C: an append writes from body on, and
	// a file whose bytes do not match is rendered again.
	body int64
	crc  uint32
}

const (
	// The stamp is a line of its own after a blank one, which the
	// stamp's text begins with.
	stampPrefix = "\n<!-- sporectl transcript "
	stampSuffix = "; rebuilt from the store's event log, edits are lost -->\n"
	// maxStampLen bounds the stamp line (its fields are numbers, a time
	// and a digest), so a file's tail is all its stamp needs read.
	maxStampLen = 512
)

func (s stamp) String() string {
	open := 0
	if s.open {
		open = 1
	}
	return fmt.Sprintf("%sv%d last_seq=%d created=%s last=%s open=%d body=%d crc32c=%08x%s",
		stampPrefix, s.format, s.lastSeq, s.created, s.last, open, s.body, s.crc, stampSuffix)
}

// state is the renderer's state the transcript ended in.
func (s stamp) state() transcript.MarkdownState {
	return transcript.MarkdownState{Started: s.lastSeq > 0, Open: s.open}
}

// size is the length of the file s is the stamp of.
func (s stamp) size() int64 {
	return s.body + int64(len(s.state().Closing())) + int64(len(s.String()))
}

// covers says whether s is the stamp of the whole log a pass saw: its
// last seq, of the spore created then.
func (s stamp) covers(lastSeq uint64, created time.Time) bool {
	return s.format == transcriptFormat && s.lastSeq == lastSeq && s.created == createdOf(created)
}

func createdOf(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// eventDigest names one stored event: equal digests, the same event.
func eventDigest(ev state.Event) string {
	d := digest.New()
	d.Uint(ev.Seq)
	d.Time(ev.At)
	d.Str(string(ev.Kind))
	d.Str(ev.Action)
	d.Str(ev.From)
	d.Str(ev.Text)
	d.Uint(ev.BridgeSeq)
	d.Str(string(ev.Line))
	return d.Sum()
}

// parseStamp parses a stamp line (with its newline); ok is false for
// anything but a line String makes.
func parseStamp(line string) (stamp, bool) {
	rest, ok1 := strings.CutPrefix(line, stampPrefix)
	rest, ok2 := strings.CutSuffix(rest, stampSuffix)
	var f [8]string
	if !ok1 || !ok2 || fields(rest, f[:]) != 7 {
		return stamp{}, false
	}
	var v [7]string
	for i, key := range [7]string{"v", "last_seq=", "created=", "last=", "open=", "body=", "crc32c="} {
		var ok bool
		if v[i], ok = strings.CutPrefix(f[i], key); !ok {
			return stamp{}, false
		}
	}
	format, err1 := strconv.Atoi(v[0])
	last, err2 := strconv.ParseUint(v[1], 10, 64)
	body, err3 := strconv.ParseInt(v[5], 10, 64)
	crc, err4 := strconv.ParseUint(v[6], 16, 32)
	s := stamp{format: format, lastSeq: last, created: v[2], last: v[3], open: v[4] == "1", body: body, crc: uint32(crc)}
	// Only the very line String makes: no other spelling of a number,
	// and no field that would not be one field of a line of .stamps.
	if errors.Join(err1, err2, err3, err4) != nil || body < 0 || !plain(s.created) || !plain(s.last) || s.String() != line {
		return stamp{}, false
	}
	return s, true
}

// plain says whether s is a non-empty run of printable ASCII without a
// space.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return s != ""
}

// readStamp reads the transcript at p whole, and says which file it read
// and the stamp it ends with; ok is false when the file is missing or is
// not exactly what that stamp describes (another version's, edited by
// hand, or torn by a crash in an append). It is how a transcript the
// stamps file does not vouch for is believed: it costs a read of the
// file, and nothing of the store.
func readStamp(p string) (s stamp, ok bool, id fileID, err error) {
	f, id, err := openID(p)
	if errors.Is(err, fs.ErrNotExist) {
		return stamp{}, false, fileID{}, nil
	}
	if err != nil {
		return stamp{}, false, fileID{}, fmt.Errorf("read view %s: %w", p, err)
	}
	defer f.Close()
	s, ok, err = verify(f, id.size)
	if err != nil {
		return stamp{}, false, fileID{}, fmt.Errorf("read view %s: %w", p, err)
	}
	return s, ok, id, nil
}

// verify reads the transcript f (of size bytes): it must end with a
// stamp of this format whose size is the file's, preceded by the closing
// its state makes, and its body must have the stamp's CRC.
func verify(f *os.File, size int64) (stamp, bool, error) {
	tail := make([]byte, min(size, maxStampLen+int64(len(transcript.MarkdownState{}.Closing()))))
	if _, err := f.ReadAt(tail, size-int64(len(tail))); err != nil && !errors.Is(err, io.EOF) {
		return stamp{}, false, err
	}
	i := bytes.LastIndex(tail, []byte(stampPrefix))
	if i < 0 {
		return stamp{}, false, nil
	}
	s, ok := parseStamp(string(tail[i:]))
	if !ok || s.size() != size || !bytes.HasSuffix(tail[:i], []byte(s.state().Closing())) {
		return stamp{}, false, nil
	}
	h := crc32.New(castagnoli)
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, s.body)); err != nil {
		return stamp{}, false, err
	}
	return s, h.Sum32() == s.crc, nil
}
