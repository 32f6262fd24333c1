package views

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Put brings a set of files made elsewhere (the page's static export)
// into the views directory the way Project does its own: each file is
// written only when its bytes differ (atomically, directories fsynced),
// a file whose content is nil is kept as it is, and in each directory
// named in prune, files ending in that directory's suffix that are not in
// files are removed (a deleted spore's page).
// Paths are slash-separated and relative to d.Path; one that would leave
// it, or name the directory's own views, is refused. It returns what it
// wrote or removed, sorted.
func (d *Dir) Put(files map[string][]byte, prune map[string]string) (written []string, err error) {
	if d.Path == "" {
		return nil, errors.New("put views: no directory")
	}
	c := newChanges(d.Path)
	var errs []error
	// Only the files to write are sorted: an export of a fleet at rest
	// keeps 10,000 pages and writes none.
	var put, bad []string
	for rel, b := range files {
		switch {
		case checkRel(rel) != nil:
			bad = append(bad, rel)
		case b != nil:
			put = append(put, rel)
		}
	}
	slices.Sort(bad)
	for _, rel := range bad {
		errs = append(errs, checkRel(rel))
	}
	slices.Sort(put)
	for _, rel := range put {
		p := filepath.FromSlash(rel)
		if err := c.mkdir(filepath.Join(d.Path, filepath.Dir(p))); err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, c.put(p, files[rel]))
	}
	for _, dir := range sortedKeys(prune) {
		if err := checkRel(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		names, err := listNames(filepath.Join(d.Path, filepath.FromSlash(dir)))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("list views in %s: %w", dir, err))
			continue
		}
		for _, name := range names {
			rel := dir + "/" + name // a name of the directory: no slash, not . or ..
			if _, keep := files[rel]; keep || !strings.HasSuffix(name, prune[dir]) || !isRegular(filepath.Join(d.Path, filepath.FromSlash(rel))) {
				continue
			}
			errs = append(errs, c.remove(filepath.FromSlash(rel)))
		}
	}
	errs = append(errs, c.sync())
	slices.Sort(c.written)
	for i, w := range c.written {
		c.written[i] = filepath.ToSlash(w)
	}
	if err := errors.Join(errs...); err != nil {
		return c.written, fmt.Errorf("put views: %w", err)
	}
	return c.written, nil
}

// listNames lists the names in dir, without their types: a directory of
// 10,000 views is listed by every projection, and most names are kept
// (isRegular asks about the others).
func listNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// isRegular says whether p is a regular file (not followed if a link).
func isRegular(p string) bool {
	_, ok, err := lstatID(p)
	return err == nil && ok
}

// checkRel refuses a path that is not a clean relative one inside the
// views directory, or that names one of Project's own views.
func checkRel(rel string) error {
	if rel == "" || rel != path.Clean(rel) || path.IsAbs(rel) || rel == ".." || strings.HasPrefix(rel, "../") || strings.Contains(rel, "\\") {
		return fmt.Errorf("put views: %q is not a path inside the views directory", rel)
	}
	switch first, _, _ := strings.Cut(rel, "/"); first {
	case FleetFile, StatusFile, TranscriptsDir, StampsFile:
		return fmt.Errorf("put views: %q is one of the views' own files", rel)
	}
	return nil
}
