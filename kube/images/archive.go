package images

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The annotations of index.json that name the image: containerd's
// importer (ctr, k3s, kind) reads the first, skopeo and the OCI tools the
// second. Both hold the full reference, which the OCI ref grammar allows.
const (
	annotationContainerdName = "io.containerd.image.name"
	annotationRefName        = "org.opencontainers.image.ref.name"
)

// layerSpec is one layer of an image and the history line that says
// what it holds.
type layerSpec struct {
	layer *blobLayer
	what  string
}

// assemble makes an OCI image from layers on an empty base, with the
// given runtime config, on linux/arch. Every time in the config is the
// epoch, so it holds nothing of when it was built.
func assemble(layers []layerSpec, cfg v1.Config, arch string, epoch time.Time) (v1.Image, error) {
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	adds := make([]mutate.Addendum, 0, len(layers))
	for _, l := range layers {
		adds = append(adds, mutate.Addendum{
			Layer:     l.layer,
			MediaType: types.OCILayer,
			History:   v1.History{Created: v1.Time{Time: epoch}, CreatedBy: l.what, Comment: "sporectl make images"},
		})
	}
	img, err := mutate.Append(img, adds...)
	if err != nil {
		return nil, fmt.Errorf("append the layers: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("read the config: %w", err)
	}
	cf = cf.DeepCopy()
	// containerd's importer drops an image whose config lacks either.
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: epoch}
	cf.Config = cfg
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("set the config: %w", err)
	}
	return img, nil
}

// Archive is one image archive written.
type Archive struct {
	Name     string  // the image's reference, as index.json names it
	Path     string  // the tar
	Manifest v1.Hash // the image manifest's digest: the image's identity
	Size     int64   // bytes of the tar
}

// blob is one file of the archive: a name under blobs/sha256/ or at the
// top, and its bytes.
type blob struct {
	name string
	size int64
	open func() (io.ReadCloser, error)
}

func bytesBlob(name string, b []byte) blob {
	return blob{name: name, size: int64(len(b)), open: func() (io.ReadCloser, error) {
		return io.NopCloser(strings.NewReader(string(b))), nil
	}}
}

// writeArchive writes img as an OCI image layout in a tar at out, its
// index naming it ref; beside the layout, a Docker-style manifest.json
// listing the same blobs (what `docker load` with the classic image
// store and `crane push` of a tar read). The tar is written under a
// temporary name and renamed, so a failed build leaves no half archive.
func writeArchive(ctx context.Context, out, ref string, img v1.Image, epoch time.Time) (Archive, error) {
	rawManifest, err := img.RawManifest()
	if err != nil {
		return Archive{}, fmt.Errorf("image manifest: %w", err)
	}
	mdigest, err := img.Digest()
	if err != nil {
		return Archive{}, fmt.Errorf("image digest: %w", err)
	}
	rawConfig, err := img.RawConfigFile()
	if err != nil {
		return Archive{}, fmt.Errorf("image config: %w", err)
	}
	cname, err := img.ConfigName()
	if err != nil {
		return Archive{}, fmt.Errorf("image config digest: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return Archive{}, fmt.Errorf("image config: %w", err)
	}
	layers, err := img.Layers()
	if err != nil {
		return Archive{}, fmt.Errorf("image layers: %w", err)
	}

	blobs := map[string]blob{}
	add := func(b blob) { blobs[b.name] = b }
	add(bytesBlob(blobPath(mdigest), rawManifest))
	add(bytesBlob(blobPath(cname), rawConfig))
	docker := tarball.Descriptor{Config: blobPath(cname), RepoTags: []string{ref}}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return Archive{}, fmt.Errorf("layer digest: %w", err)
		}
		size, err := l.Size()
		if err != nil {
			return Archive{}, fmt.Errorf("layer %s size: %w", d, err)
		}
		add(blob{name: blobPath(d), size: size, open: l.Compressed})
		docker.Layers = append(docker.Layers, blobPath(d))
	}
	index := v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests: []v1.Descriptor{{
			MediaType:   types.OCIManifestSchema1,
			Size:        int64(len(rawManifest)),
			Digest:      mdigest,
			Platform:    &v1.Platform{OS: cf.OS, Architecture: cf.Architecture},
			Annotations: map[string]string{annotationContainerdName: ref, annotationRefName: ref},
		}},
	}
	for name, v := range map[string]any{
		"index.json":    index,
		"manifest.json": tarball.Manifest{docker},
		"oci-layout":    map[string]string{"imageLayoutVersion": "1.0.0"},
	} {
		b, err := json.Marshal(v)
		if err != nil {
			return Archive{}, fmt.Errorf("encode %s: %w", name, err)
		}
		add(bytesBlob(name, b))
	}

	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return Archive{}, fmt.Errorf("make the output directory: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp*")
	if err != nil {
		return Archive{}, fmt.Errorf("write %s: %w", out, err)
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	defer tmp.Close()
	counted := &countWriter{w: tmp}
	if err := writeBlobs(ctx, counted, blobs, epoch); err != nil {
		return Archive{}, fmt.Errorf("write %s: %w", out, err)
	}
	if err := tmp.Sync(); err != nil {
		return Archive{}, fmt.Errorf("write %s: %w", out, err)
	}
	if err := tmp.Close(); err != nil {
		return Archive{}, fmt.Errorf("write %s: %w", out, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return Archive{}, fmt.Errorf("write %s: %w", out, err)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return Archive{}, fmt.Errorf("write %s: %w", out, err)
	}
	return Archive{Name: ref, Path: out, Manifest: mdigest, Size: counted.n}, nil
}

func blobPath(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }

// writeBlobs writes the archive's tar: its directories and files in name
// order, every header root-owned and dated at the epoch.
func writeBlobs(ctx context.Context, w io.Writer, blobs map[string]blob, epoch time.Time) error {
	names := make([]string, 0, len(blobs))
	dirs := map[string]bool{}
	for n := range blobs {
		names = append(names, n)
		for d := filepath.Dir(n); d != "."; d = filepath.Dir(d) {
			if !dirs[d] {
				dirs[d] = true
				names = append(names, d+"/")
			}
		}
	}
	sort.Strings(names)
	tw := tar.NewWriter(w)
	for _, n := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		if strings.HasSuffix(n, "/") {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: n, Mode: 0o755, ModTime: epoch}); err != nil {
				return err
			}
			continue
		}
		b := blobs[n]
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: 0o644, Size: b.size, ModTime: epoch}); err != nil {
			return err
		}
		if err := copyContent(tw, file{hdr: tar.Header{Name: n, Size: b.size}, open: b.open}); err != nil {
			return err
		}
	}
	return tw.Close()
}
