// Package digest hashes a sequence of values into a short stamp: what a
// view or a page was made from, so that the next projection can tell,
// without rendering it, that it would make the same bytes.
package digest

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"time"
)

// A Digest hashes values, each written after its kind and with its
// length (a number as a varint), so that no two sequences of values hash
// the same bytes. Its zero value is not usable: make one with New.
type Digest struct {
	h hash.Hash
	b []byte
}

// New is an empty digest.
func New() *Digest { return &Digest{h: sha256.New(), b: make([]byte, 0, 4<<10)} }

// Reset empties d, for reuse.
func (d *Digest) Reset() { d.h.Reset(); d.b = d.b[:0] }

// Uint adds v.
func (d *Digest) Uint(v uint64) { d.b = binary.AppendUvarint(append(d.b, 'u'), v); d.flush(false) }

// Int adds v.
func (d *Digest) Int(v int64) { d.b = binary.AppendVarint(append(d.b, 'i'), v); d.flush(false) }

// Bool adds v.
func (d *Digest) Bool(v bool) {
	if v {
		d.b = append(d.b, 'T')
	} else {
		d.b = append(d.b, 'F')
	}
	d.flush(false)
}

// Str adds s.
func (d *Digest) Str(s string) {
	d.b = binary.AppendUvarint(append(d.b, 's'), uint64(len(s)))
	d.b = append(d.b, s...)
	d.flush(false)
}

// Time adds t's instant (not its location): the zero time apart from
// every other.
func (d *Digest) Time(t time.Time) {
	if t.IsZero() {
		d.b = append(d.b, 'z')
		d.flush(false)
		return
	}
	d.b = append(d.b, 't')
	d.Int(t.Unix())
	d.Int(int64(t.Nanosecond()))
}

func (d *Digest) flush(all bool) {
	if all || len(d.b) >= cap(d.b)/2 {
		d.h.Write(d.b)
		d.b = d.b[:0]
	}
}

// Sum is the digest of what was added: 32 hex digits (128 bits).
func (d *Digest) Sum() string {
	d.flush(true)
	var sum [sha256.Size]byte
	return hex.EncodeToString(d.h.Sum(sum[:0])[:16])
}
