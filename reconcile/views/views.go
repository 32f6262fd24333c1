package views

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// The files of a views directory.
const (
	FleetFile      = "fleet.json"
	StatusFile     = "STATUS.md"
	TranscriptsDir = "transcripts"
)

// DefaultPageSize is how many events a transcript reads at a time.
const DefaultPageSize = 5000

// Scope says how much of the fleet a Result covers.
type Scope int

const (
	// Partial: the pass looked at named spores only. Only their
	// transcripts are projected; fleet.json and STATUS.md, which describe
	// one pass over the whole fleet, are left as the last full pass wrote
	// them, and no transcript is removed.
	Partial Scope = iota
	// Full: the pass covered every spore in the store. Every view is
	// projected, and the transcripts of spores not in the Result (deleted)
	// are removed.
	Full
)

// Dir is a directory of views.
type Dir struct {
	// Path is the directory; it is created when missing.
	Path string
	// PageSize is how many events a transcript reads at a time;
	// 0 means DefaultPageSize.
	PageSize int
}

// Project brings the views under d.Path up to date with res, reading
// events from st, and returns the files it wrote or removed (paths
// relative to d.Path, sorted). A projection with nothing changed writes
// nothing. Failures of one view do not stop the others: they are joined
// into err, and written still lists what was changed.
func (d *Dir) Project(ctx context.Context, st state.Store, res reconcile.Result, scope Scope) (written []string, err error) {
	if d.Path == "" {
		return nil, errors.New("project views: no directory")
	}
	c := newChanges(d.Path)
	var errs []error
	if err := c.mkdir(filepath.Join(d.Path, TranscriptsDir)); err != nil {
		return nil, fmt.Errorf("project views: %w", err)
	}
	// A stamp stays true of its file as long as that file is there (an
	// edit or a rename over it makes another), so what the last
	// projection recorded is kept unless this one learns better.
	old, oldRaw := readStamps(d.Path)
	kept := stamps{fleet: old.fleet, transcripts: maps.Clone(old.transcripts)}
	rendered := map[string]stamp{}
	errs = append(errs, d.transcripts(ctx, c, st, res, scope, old, kept, rendered))
	var digest string
	if scope == Full && ctx.Err() == nil {
		var err error
		digest, err = d.fleet(c, res, old.fleet)
		errs = append(errs, err)
	}
	errs = append(errs, ctx.Err())
	if err := c.sync(); err != nil {
		errs = append(errs, err)
	} else if ctx.Err() == nil {
		next := stampsFor(c, kept, rendered, digest)
		// Stamps that say what the file read says need no new file: a
		// projection of a fleet at rest does not encode 10,000 lines to
		// find them the same.
		if oldRaw == nil || !next.equal(old) {
			errs = append(errs, writeStamps(d.Path, next, oldRaw))
		}
	}
	slices.Sort(c.written)
	if err := errors.Join(errs...); err != nil {
		return c.written, fmt.Errorf("project views: %w", err)
	}
	return c.written, nil
}

// fleet projects fleet.json and STATUS.md, unless the stamps say both
// files are still those rendered from a fleet with f's digest: a fleet at
// rest costs its digest and two lstats, not a rendering of each. It
// returns the digest when it rendered them ("" when it did not): the
// stamps are then those of the files renamed into place.
func (d *Dir) fleet(c *changes, res reconcile.Result, have fleetStamp) (string, error) {
	digest := fleetDigest(res)
	if have.digest == digest && isFile(filepath.Join(c.root, FleetFile), have.fleet) && isFile(filepath.Join(c.root, StatusFile), have.status) {
		return "", nil
	}
	f := fleetOf(res)
	b, err := fleetJSON(f)
	if err != nil {
		return digest, err
	}
	return digest, errors.Join(c.put(FleetFile, b), c.put(StatusFile, statusMarkdown(f)))
}

func (d *Dir) pageSize() int {
	return cmp.Or(d.PageSize, DefaultPageSize)
}

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
