package views

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/sporectl/sporectl/internal/digest"
	"github.com/sporectl/sporectl/reconcile"
)

// StampsFile is the views' record of what each view was last made from
// and which file that was (docs/views.md "Stamps"). It is a cache: a
// projection that cannot read it, or finds a file other than the one it
// names, reads or renders that view as if it were not there. It is not a
// view, and Project does not list it in what it wrote.
const StampsFile = ".stamps"

// fleetStampFormat is in the fleet's digest: raise it whenever fleet.json
// or STATUS.md would render differently from the same fleetFile, so that
// views an older sporectl wrote are rendered again
// (TestFleetStampFormatPinsTheRendering fails until it is raised).
const fleetStampFormat = 1

const (
	stampsHeader  = "sporectl views stamps v2\n"
	stampsTrailer = "crc32c "
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// fileID says which version of a file a view is: its inode, size and
// modification time, which a rename keeps. A view whose file still has
// the fileID its stamp recorded is the file the stamp describes; one
// edited, replaced, removed or written by another projection since has
// another, and is read or rendered as if there were no stamp.
type fileID struct {
	ino   uint64
	size  int64
	mtime int64 // nanoseconds since the epoch
}

func idOf(st *syscall.Stat_t) fileID {
	return fileID{ino: st.Ino, size: st.Size, mtime: st.Mtim.Nano()}
}

// lstatID is the fileID of the regular file at path; ok is false when
// there is none.
func lstatID(path string) (id fileID, ok bool, err error) {
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		if errors.Is(err, syscall.ENOENT) {
			return fileID{}, false, nil
		}
		return fileID{}, false, fmt.Errorf("stat view %s: %w", path, err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return fileID{}, false, nil
	}
	return idOf(&st), true, nil
}

// isFile says whether the file at path is still the one id names.
func isFile(path string, id fileID) bool {
	have, ok, err := lstatID(path)
	return err == nil && ok && have == id
}

// stamps is what the stamps file says.
type stamps struct {
	// fleet is fleet.json's and STATUS.md's: the zero value when unknown.
	fleet fleetStamp
	// transcripts are by spore id.
	transcripts map[string]transcriptStamp
}

// fleetStamp says fleet.json and STATUS.md are the files fleet and
// status, rendered from a fleetFile whose digest is digest.
type fleetStamp struct {
	digest        string
	fleet, status fileID
}

// transcriptStamp says the transcript that is file id starts with s.
type transcriptStamp struct {
	s  stamp
	id fileID
}

// readStamps reads the stamps file under root. Anything unreadable, of
// another version or failing its checksum counts as no stamps: every view
// is then checked the slow way, and nothing is wrong but the time.
func readStamps(root string) (stamps, []byte) {
	none := stamps{transcripts: map[string]transcriptStamp{}}
	raw, err := os.ReadFile(filepath.Join(root, StampsFile))
	if err != nil {
		return none, nil
	}
	s, ok := parseStamps(raw)
	if !ok {
		return none, nil
	}
	return s, raw
}

func parseStamps(raw []byte) (stamps, bool) {
	// A line a transcript, near enough: the map is not grown 10 times.
	s := stamps{transcripts: make(map[string]transcriptStamp, bytes.Count(raw, []byte{'\n'}))}
	body, ok := bytes.CutPrefix(raw, []byte(stampsHeader))
	if !ok {
		return stamps{}, false
	}
	i := bytes.LastIndex(body, []byte(stampsTrailer))
	if i < 0 || (i > 0 && body[i-1] != '\n') {
		return stamps{}, false
	}
	sum := strings.TrimSuffix(string(body[i+len(stampsTrailer):]), "\n")
	if sum != fmt.Sprintf("%08x", crc32.Checksum(raw[:len(stampsHeader)+i], castagnoli)) {
		return stamps{}, false
	}
	// One copy of the text: the ids and times kept are slices of it.
	text := string(body[:i])
	var f [13]string
	for line := range strings.Lines(text) {
		n := fields(strings.TrimSuffix(line, "\n"), f[:])
		switch {
		case n == 8 && f[0] == "fleet":
			fl, ok1 := parseID(f[2:5])
			st, ok2 := parseID(f[5:8])
			if !ok1 || !ok2 {
				return stamps{}, false
			}
			s.fleet = fleetStamp{digest: f[1], fleet: fl, status: st}
		case n == 12 && f[0] == "t":
			format, err1 := strconv.Atoi(f[2])
			last, err2 := strconv.ParseUint(f[3], 10, 64)
			body, err3 := strconv.ParseInt(f[7], 10, 64)
			crc, err4 := strconv.ParseUint(f[8], 16, 32)
			id, ok := parseID(f[9:12])
			if err1 != nil || err2 != nil || err3 != nil || err4 != nil || !ok || f[6] != "0" && f[6] != "1" {
				return stamps{}, false
			}
			s.transcripts[f[1]] = transcriptStamp{id: id, s: stamp{format: format, lastSeq: last, created: f[4],
				last: f[5], open: f[6] == "1", body: body, crc: uint32(crc)}}
		default:
			return stamps{}, false
		}
	}
	return s, true
}

// fields splits line at single spaces into f, and says how many fields
// there were (len(f) when there were more).
func fields(line string, f []string) int {
	n := 0
	for n < len(f) {
		field, rest, more := strings.Cut(line, " ")
		f[n], n, line = field, n+1, rest
		if !more {
			return n
		}
	}
	return n
}

func parseID(f []string) (fileID, bool) {
	ino, err1 := strconv.ParseUint(f[0], 10, 64)
	size, err2 := strconv.ParseInt(f[1], 10, 64)
	mtime, err3 := strconv.ParseInt(f[2], 10, 64)
	return fileID{ino: ino, size: size, mtime: mtime}, err1 == nil && err2 == nil && err3 == nil
}

// equal says whether s and o hold the same stamps.
func (s stamps) equal(o stamps) bool {
	return s.fleet == o.fleet && maps.Equal(s.transcripts, o.transcripts)
}

// marshal is the stamps file's bytes: transcripts sorted by id, so the
// same stamps make the same file; sizeHint is what they took last time.
func (s stamps) marshal(sizeHint int) []byte {
	b := append(make([]byte, 0, sizeHint+512), stampsHeader...)
	if s.fleet.digest != "" {
		b = fmt.Appendf(b, "fleet %s ", s.fleet.digest)
		b = appendID(b, s.fleet.fleet)
		b = append(b, ' ')
		b = appendID(b, s.fleet.status)
		b = append(b, '\n')
	}
	for _, id := range sortedKeys(s.transcripts) {
		t := s.transcripts[id]
		b = append(b, "t "...)
		b = append(b, id...)
		b = append(b, ' ')
		b = strconv.AppendInt(b, int64(t.s.format), 10)
		b = append(b, ' ')
		b = strconv.AppendUint(b, t.s.lastSeq, 10)
		b = append(b, ' ')
		b = append(b, t.s.created...)
		b = append(b, ' ')
		b = append(b, t.s.last...)
		if t.s.open {
			b = append(b, " 1 "...)
		} else {
			b = append(b, " 0 "...)
		}
		b = strconv.AppendInt(b, t.s.body, 10)
		b = fmt.Appendf(b, " %08x ", t.s.crc)
		b = appendID(b, t.id)
		b = append(b, '\n')
	}
	return fmt.Appendf(b, "%s%08x\n", stampsTrailer, crc32.Checksum(b, castagnoli))
}

func appendID(b []byte, id fileID) []byte {
	b = strconv.AppendUint(b, id.ino, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, id.size, 10)
	b = append(b, ' ')
	return strconv.AppendInt(b, id.mtime, 10)
}

// writeStamps replaces the stamps file with s, unless it holds them
// already. It is not fsynced: after a crash a stamps file that is torn
// or empty fails its checksum and counts as none.
func writeStamps(root string, s stamps, old []byte) error {
	b := s.marshal(len(old))
	if bytes.Equal(b, old) {
		return nil
	}
	p := filepath.Join(root, StampsFile)
	tmp, err := writeTemp(p, b)
	if err == nil {
		if err = os.Rename(tmp, p); err != nil {
			_ = os.Remove(tmp)
		}
	}
	if err != nil {
		return viewErr("write views stamps", p, err)
	}
	return nil
}

// fleetDigest is a digest of everything fleet.json and STATUS.md are
// rendered from, fleetOf(res): equal digests, equal files. It is made of
// res's spores in fleetOf's order, each whole (SporeHealth.AddTo, which
// has every field fleetOf takes and some it does not), and its orphans
// as fleetOf keeps them.
func fleetDigest(res reconcile.Result) string {
	d := digest.New()
	d.Uint(fleetStampFormat)
	d.Uint(fleetVersion)
	spores := sorted(res)
	d.Uint(uint64(len(spores)))
	for i := range spores {
		spores[i].AddTo(d)
	}
	orphans := slices.Compact(slices.Sorted(slices.Values(res.Orphans)))
	d.Uint(uint64(len(orphans)))
	for _, o := range orphans {
		d.Str(o)
	}
	return d.Sum()
}

// stampsFor is the stamps of the views a projection left: those it found
// unchanged or had no better stamp for (kept), and those it wrote, once
// renamed into place (c.ids). A view that failed to be written keeps the
// stamp of the file still there.
func stampsFor(c *changes, kept stamps, rendered map[string]stamp, fleetDigest string) stamps {
	next := stamps{fleet: kept.fleet, transcripts: kept.transcripts}
	for sid, s := range rendered {
		if id, ok := c.ids[transcriptPath(sid)]; ok {
			next.transcripts[sid] = transcriptStamp{s: s, id: id}
		}
	}
	if fleetDigest != "" {
		fl, ok1 := c.ids[FleetFile]
		st, ok2 := c.ids[StatusFile]
		if ok1 && ok2 {
			next.fleet = fleetStamp{digest: fleetDigest, fleet: fl, status: st}
		}
	}
	return next
}
