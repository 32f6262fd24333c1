package images

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"time"
)

// file is one entry of a layer: its tar header and, for a regular file,
// where its bytes come from. Names are relative ("usr/bin/git"), without
// a leading "/" or "./" and without a trailing "/".
type file struct {
	hdr  tar.Header
	open func() (io.ReadCloser, error)
}

// dir, reg and symlink make the entries the builder adds itself; owners
// and modes are the image's, never the build machine's.
func dir(name string, mode int64, uid, gid int) file {
	return file{hdr: tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: mode, Uid: uid, Gid: gid}}
}

func reg(name string, mode int64, uid, gid int, data []byte) file {
	return file{
		hdr:  tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Uid: uid, Gid: gid, Size: int64(len(data))},
		open: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(string(data))), nil },
	}
}

func symlink(name, target string) file {
	return file{hdr: tar.Header{Typeflag: tar.TypeSymlink, Name: name, Linkname: target, Mode: 0o777}}
}

// parents are the directory entries above name, root:root 0755 (what
// Debian's are), for a layer that adds files below directories another
// layer made.
func parents(name string) []file {
	var out []file
	for d := path.Dir(name); d != "." && d != "/"; d = path.Dir(d) {
		out = append(out, dir(d, 0o755, 0, 0))
	}
	return out
}

// cleanName makes a tar name relative and clean; "" for the root itself.
func cleanName(name string) (string, error) {
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", fmt.Errorf("entry %q climbs out of the root", name)
		}
	}
	n := path.Clean("/" + name)
	if n == "/" {
		return "", nil
	}
	return strings.TrimPrefix(n, "/"), nil
}

// normalize orders a layer's entries by name and makes their headers
// depend only on what the image holds: one mtime (epoch), numeric owners
// only, no access or change times, no PAX records but extended attributes
// (file capabilities). A hard link's target must come first in a tar, so
// within each group of hard links the first name in order holds the
// bytes and the others link to it. A name given twice is an error: which
// one an unpacker keeps is not the builder's to leave to chance.
func normalize(files []file, epoch time.Time) ([]file, error) {
	byName := make(map[string]int, len(files))
	out := make([]file, 0, len(files))
	for _, f := range files {
		n, err := cleanName(f.hdr.Name)
		if err != nil {
			return nil, err
		}
		if n == "" {
			continue // the root directory: the runtime's, not the layer's
		}
		h := tar.Header{
			Typeflag: f.hdr.Typeflag,
			Name:     n,
			Linkname: f.hdr.Linkname,
			Size:     f.hdr.Size,
			Mode:     f.hdr.Mode & 0o7777,
			Uid:      f.hdr.Uid,
			Gid:      f.hdr.Gid,
			ModTime:  epoch,
			Devmajor: f.hdr.Devmajor,
			Devminor: f.hdr.Devminor,
		}
		for k, v := range f.hdr.PAXRecords {
			if strings.HasPrefix(k, "SCHILY.xattr.") {
				if h.PAXRecords == nil {
					h.PAXRecords = map[string]string{}
				}
				h.PAXRecords[k] = v
			}
		}
		switch h.Typeflag {
		case tar.TypeReg, tar.TypeRegA:
			h.Typeflag = tar.TypeReg
		case tar.TypeLink:
			if h.Linkname, err = cleanName(h.Linkname); err != nil || h.Linkname == "" {
				return nil, fmt.Errorf("hard link %s: target %q is not in the layer", n, f.hdr.Linkname)
			}
			h.Size = 0
		case tar.TypeDir, tar.TypeSymlink, tar.TypeFifo:
			h.Size = 0
		case tar.TypeChar, tar.TypeBlock:
			continue // device nodes are the runtime's /dev, never an image's
		default:
			return nil, fmt.Errorf("entry %s: tar type %q is not a file, directory or link", n, h.Typeflag)
		}
		if _, dup := byName[n]; dup {
			return nil, fmt.Errorf("entry %s is in the layer twice", n)
		}
		byName[n] = len(out)
		out = append(out, file{hdr: h, open: f.open})
	}
	if err := orderHardLinks(out, byName); err != nil {
		return nil, err
	}
	sort.Slice(out, func(i, j int) bool { return out[i].hdr.Name < out[j].hdr.Name })
	return out, nil
}

// orderHardLinks makes the first name of each hard-link group the one
// that holds the bytes.
func orderHardLinks(files []file, byName map[string]int) error {
	groups := map[string][]int{} // the entry holding the bytes -> links to it
	for i, f := range files {
		if f.hdr.Typeflag != tar.TypeLink {
			continue
		}
		t, ok := byName[f.hdr.Linkname]
		if !ok || files[t].hdr.Typeflag != tar.TypeReg {
			return fmt.Errorf("hard link %s: target %s is not a regular file of the layer", f.hdr.Name, f.hdr.Linkname)
		}
		groups[f.hdr.Linkname] = append(groups[f.hdr.Linkname], i)
	}
	for target, links := range groups {
		t := byName[target]
		first := t
		for _, i := range links {
			if files[i].hdr.Name < files[first].hdr.Name {
				first = i
			}
		}
		if first != t {
			name, linkName := files[first].hdr.Name, files[t].hdr.Name
			files[first].hdr, files[first].open = files[t].hdr, files[t].open
			files[first].hdr.Name = name
			files[t] = file{hdr: tar.Header{Typeflag: tar.TypeLink, Name: linkName, Mode: files[first].hdr.Mode,
				Uid: files[first].hdr.Uid, Gid: files[first].hdr.Gid, ModTime: files[first].hdr.ModTime}}
		}
		for _, i := range append(links, t) {
			if i != first {
				files[i].hdr.Linkname = files[first].hdr.Name
			}
		}
	}
	return nil
}

// writeTar writes normalized entries as an uncompressed tar (a layer's
// diff), directories with a trailing "/" as tar tools write them.
func writeTar(ctx context.Context, w io.Writer, files []file) error {
	tw := tar.NewWriter(w)
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		h := f.hdr
		if h.Typeflag == tar.TypeDir {
			h.Name += "/"
		}
		if err := tw.WriteHeader(&h); err != nil {
			return fmt.Errorf("write the header of %s: %w", f.hdr.Name, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if err := copyContent(tw, f); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("finish the layer's tar: %w", err)
	}
	return nil
}

// copyContent writes exactly the size the header promised: a source
// that changed under the build is an error, not a corrupt layer.
func copyContent(w io.Writer, f file) error {
	if f.open == nil {
		return fmt.Errorf("entry %s: no content", f.hdr.Name)
	}
	r, err := f.open()
	if err != nil {
		return fmt.Errorf("open the content of %s: %w", f.hdr.Name, err)
	}
	defer r.Close()
	n, err := io.Copy(w, io.LimitReader(r, f.hdr.Size))
	if err != nil {
		return fmt.Errorf("copy the content of %s: %w", f.hdr.Name, err)
	}
	if n != f.hdr.Size {
		return fmt.Errorf("entry %s: %d bytes, its header says %d", f.hdr.Name, n, f.hdr.Size)
	}
	return nil
}

// diffID is the sha256 of the layer's uncompressed tar: the layer's
// identity in the config, and the key of the layer cache.
func diffID(ctx context.Context, files []file) (string, error) {
	h := sha256.New()
	if err := writeTar(ctx, h, files); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
