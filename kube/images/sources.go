package images

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// spool holds the contents of a tar's regular files in one scratch file,
// so the entries can be reordered without holding a root filesystem in
// memory.
type spool struct {
	f *os.File
}

func newSpool(dir string) (*spool, error) {
	f, err := os.CreateTemp(dir, ".spool-*")
	if err != nil {
		return nil, fmt.Errorf("make a scratch file: %w", err)
	}
	os.Remove(f.Name()) // unnamed: gone when closed, whatever happens
	return &spool{f: f}, nil
}

func (s *spool) Close() error { return s.f.Close() }

// readTar reads every entry of a tar, each file's bytes into the spool;
// rename maps an entry's name to its name in the image ("" drops it).
// A gzip-compressed tar is read as well.
func (s *spool) readTar(ctx context.Context, r io.Reader, what string, rename func(string) string) ([]file, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		z, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", what, err)
		}
		defer z.Close()
		r = z
	} else {
		r = br
	}
	tr := tar.NewReader(r)
	var out []file
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", what, err)
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		name := rename(h.Name)
		if name == "" {
			continue
		}
		h.Name = name
		if h.Typeflag == tar.TypeLink {
			h.Linkname = rename(h.Linkname)
		}
		f := file{hdr: *h}
		if h.Typeflag == tar.TypeReg || h.Typeflag == tar.TypeRegA {
			off, err := s.f.Seek(0, io.SeekEnd)
			if err != nil {
				return nil, fmt.Errorf("spool %s: %w", what, err)
			}
			n, err := io.Copy(s.f, tr)
			if err != nil {
				return nil, fmt.Errorf("read %s of %s: %w", h.Name, what, err)
			}
			size := n
			f.hdr.Size = size
			f.open = func() (io.ReadCloser, error) {
				return io.NopCloser(io.NewSectionReader(s.f, off, size)), nil
			}
		}
		out = append(out, f)
	}
}

// readAll is the content of an entry read into a spool.
func readAll(f file) ([]byte, error) {
	r, err := f.open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// under keeps the entries below prefix ("package" for an npm tarball),
// cleaned, and drops the others.
func under(prefix string) func(string) string {
	return func(name string) string {
		n, err := cleanName(name)
		if err != nil {
			return name // refused, with its name, by the caller
		}
		if !strings.HasPrefix(n, prefix+"/") {
			return ""
		}
		return n
	}
}

// asIs keeps a root filesystem's names (cleaned by normalize).
func asIs(name string) string {
	if n, err := cleanName(name); err == nil && n == "" {
		return ""
	}
	return name
}
