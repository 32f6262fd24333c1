package images

import (
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// gzipLevel trades size for time: the spore image's Claude Code binary
// alone is ~370 MB, and level 1 packs it to about half in a third of the
// default level's time. The level is part of what fixes the digest.
const gzipLevel = gzip.BestSpeed

// blobLayer is a layer whose gzip blob is a file: it satisfies
// go-containerregistry's v1.Layer so mutate can put it in an image, and
// is written into the archive by streaming the file.
type blobLayer struct {
	path   string
	digest v1.Hash // of the gzip blob
	diff   v1.Hash // of the uncompressed tar
	size   int64
}

var _ v1.Layer = (*blobLayer)(nil)

func (l *blobLayer) Digest() (v1.Hash, error)            { return l.digest, nil }
func (l *blobLayer) DiffID() (v1.Hash, error)            { return l.diff, nil }
func (l *blobLayer) Size() (int64, error)                { return l.size, nil }
func (l *blobLayer) MediaType() (types.MediaType, error) { return types.OCILayer, nil }
func (l *blobLayer) Compressed() (io.ReadCloser, error)  { return os.Open(l.path) }

func (l *blobLayer) Uncompressed() (io.ReadCloser, error) {
	f, err := os.Open(l.path)
	if err != nil {
		return nil, err
	}
	z, err := gzip.NewReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("read layer %s: %w", l.diff, err)
	}
	return readCloser{z, func() error { return errors.Join(z.Close(), f.Close()) }}, nil
}

type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }

// layerStore is where layer blobs are written: the cache directory when
// there is one (blobs named by their diffID, so a warm build finds a
// layer it already compressed, whatever made it), else a scratch one.
type layerStore struct {
	dir string
}

// layer packs normalized entries as a gzip blob, or finds the blob of the
// same diff already in the store. The tar is written twice when it is
// new — once to learn its diffID, once to compress it — so that a warm
// build pays only the hashing.
func (s layerStore) layer(ctx context.Context, files []file) (*blobLayer, error) {
	id, err := diffID(ctx, files)
	if err != nil {
		return nil, err
	}
	blob := filepath.Join(s.dir, "sha256-"+id+".tar.gz")
	if l, err := s.cached(blob, id); err == nil {
		return l, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, fmt.Errorf("make the layer directory: %w", err)
	}
	tmp, err := os.CreateTemp(s.dir, ".layer-*.tmp")
	if err != nil {
		return nil, fmt.Errorf("make a layer file: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	defer tmp.Close()
	if err := tmp.Chmod(0o644); err != nil {
		return nil, fmt.Errorf("make a layer file: %w", err)
	}
	zh, uh := sha256.New(), sha256.New()
	counted := &countWriter{w: io.MultiWriter(tmp, zh)}
	z, err := gzip.NewWriterLevel(counted, gzipLevel)
	if err != nil {
		return nil, err
	}
	if err := writeTar(ctx, io.MultiWriter(z, uh), files); err != nil {
		return nil, err
	}
	if err := z.Close(); err != nil {
		return nil, fmt.Errorf("compress layer %s: %w", id, err)
	}
	if got := hex.EncodeToString(uh.Sum(nil)); got != id {
		return nil, fmt.Errorf("layer %s changed while it was packed (now %s): an input changed under the build", id, got)
	}
	if err := tmp.Sync(); err != nil {
		return nil, fmt.Errorf("write layer %s: %w", id, err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("write layer %s: %w", id, err)
	}
	// The digest is in the sidecar so a warm build need not hash the blob;
	// the blob lands last, so a blob without its sidecar is never found.
	digest := hex.EncodeToString(zh.Sum(nil))
	if err := writeFileAtomic(blob+".digest", []byte(digest+"\n")); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp.Name(), blob); err != nil {
		return nil, fmt.Errorf("store layer %s: %w", id, err)
	}
	return &blobLayer{path: blob, digest: hash(digest), diff: hash(id), size: counted.n}, nil
}

// cached is the blob of a diff the store already holds; fs.ErrNotExist
// when it holds none.
func (s layerStore) cached(blob, id string) (*blobLayer, error) {
	st, err := os.Stat(blob)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(blob + ".digest")
	if err != nil {
		return nil, err
	}
	digest := strings.TrimSpace(string(b))
	if len(digest) != sha256.Size*2 {
		return nil, fmt.Errorf("layer cache %s: its digest file is damaged (remove both files)", blob)
	}
	return &blobLayer{path: blob, digest: hash(digest), diff: hash(id), size: st.Size()}, nil
}

func hash(hexDigest string) v1.Hash { return v1.Hash{Algorithm: "sha256", Hex: hexDigest} }

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// writeFileAtomic writes a small file under a temporary name and renames
// it into place, so a reader never sees half of it.
func writeFileAtomic(name string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := os.Rename(tmp.Name(), name); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}
