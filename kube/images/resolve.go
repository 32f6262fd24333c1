package images

import (
	"archive/tar"
	"fmt"
	"path"
	"strings"
)

// resolve follows symbolic links, in every component of name, through
// the entries lookup finds (by absolute, clean name), as the kernel would
// in the container: on merged-/usr Debian /bin/sh is usr/bin/sh through
// the /bin link. It returns the name the path ends at.
func resolve(lookup func(string) (*tar.Header, bool), name string) (string, error) {
	todo := strings.Split(strings.Trim(path.Clean("/"+name), "/"), "/")
	cur := "/"
	for hops := 0; len(todo) > 0; {
		part := todo[0]
		todo = todo[1:]
		if part == "" || part == "." {
			continue
		}
		next := path.Join(cur, part)
		h, ok := lookup(next)
		if !ok {
			return next, fmt.Errorf("%s is not in the image", next)
		}
		if h.Typeflag != tar.TypeSymlink {
			cur = next
			continue
		}
		if hops++; hops > 40 {
			return next, fmt.Errorf("%s: too many links", name)
		}
		t := h.Linkname
		if path.IsAbs(t) {
			cur = "/"
		}
		todo = append(strings.Split(strings.Trim(t, "/"), "/"), todo...)
	}
	return cur, nil
}
