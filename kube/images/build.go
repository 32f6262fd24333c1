package images

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/sporectl/sporectl/kube"
)

// The images' names: the spore image is the runtime's default
// (`init --image` leaves it when not given), the sporectl image the one
// kube/deploy/kustomization.yaml sets for serve and reconcile.
const (
	SporeName    = kube.DefaultImage
	SporectlName = "ghcr.io/sporectl/sporectl:latest"
)

// Where things are in both images, the Dockerfiles' paths.
const (
	SporectlPath = "/usr/local/bin/sporectl"
	CACertsPath  = "/etc/ssl/certs/ca-certificates.crt"
	defaultPATH  = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	// SporectlUID is the sporectl image's user: serve.yaml's and
	// reconcile.yaml's runAsUser.
	SporectlUID = 1000
)

// Builder builds image archives. The zero value builds with the Unix
// epoch as every time and no layer cache.
type Builder struct {
	// Epoch is every file's mtime and the config's created time
	// (SOURCE_DATE_EPOCH, or 0).
	Epoch time.Time
	// LayerCache holds compressed layers by diffID across builds; empty
	// means a scratch directory beside the archive, removed after.
	LayerCache string
}

// SporectlInputs are what the sporectl image holds.
type SporectlInputs struct {
	Sporectl string // the static binary
	CACerts  string // a PEM bundle (Debian's ca-certificates)
}

// Sporectl writes the sporectl image to out: the binary and the CA
// bundle on an empty base, run as UID 1000 with the binary as its
// entrypoint (serve and reconcile give their verb as the container's
// args).
func (b Builder) Sporectl(ctx context.Context, in SporectlInputs, out string) (Archive, error) {
	arch, err := staticArch(in.Sporectl)
	if err != nil {
		return Archive{}, err
	}
	certs, err := os.ReadFile(in.CACerts)
	if err != nil {
		return Archive{}, fmt.Errorf("read the CA certificates: %w", err)
	}
	bin, err := regFromPath(SporectlPath[1:], 0o755, in.Sporectl)
	if err != nil {
		return Archive{}, err
	}
	passwd := "root:x:0:0:root:/root:/sbin/nologin\n" +
		"sporectl:x:1000:1000:sporectl:/home/sporectl:/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin\n"
	group := "root:x:0:\nsporectl:x:1000:\nnogroup:x:65534:\n"
	files := withParents([]file{
		bin,
		reg(CACertsPath[1:], 0o644, 0, 0, certs),
		reg("etc/passwd", 0o644, 0, 0, []byte(passwd)),
		reg("etc/group", 0o644, 0, 0, []byte(group)),
		dir("home/sporectl", 0o755, SporectlUID, SporectlUID),
		dir("tmp", 0o1777, 0, 0),
	})
	return b.build(ctx, out, SporectlName, arch, v1.Config{
		User:       "1000:1000",
		Env:        []string{"PATH=" + defaultPATH, "SSL_CERT_FILE=" + CACertsPath},
		Entrypoint: []string{SporectlPath},
		WorkingDir: "/",
	}, []layerGroup{{files: files, what: "sporectl, CA certificates, user 1000"}})
}

// layerGroup is one layer's entries before they are packed.
type layerGroup struct {
	files []file
	what  string
}

// build packs each group as a layer (or finds it in the cache), puts
// them in one image with cfg and writes its archive.
func (b Builder) build(ctx context.Context, out, ref, arch string, cfg v1.Config, groups []layerGroup) (Archive, error) {
	store, done, err := b.layerStore(filepath.Dir(out))
	if err != nil {
		return Archive{}, err
	}
	defer done()
	epoch := b.Epoch.UTC()
	if b.Epoch.IsZero() {
		epoch = time.Unix(0, 0).UTC() // time.Time's zero is year 1, before any tar's
	}
	var layers []layerSpec
	for _, g := range groups {
		files, err := normalize(g.files, epoch)
		if err != nil {
			return Archive{}, fmt.Errorf("%s layer (%s): %w", ref, g.what, err)
		}
		l, err := store.layer(ctx, files)
		if err != nil {
			return Archive{}, fmt.Errorf("%s layer (%s): %w", ref, g.what, err)
		}
		layers = append(layers, layerSpec{layer: l, what: g.what})
	}
	img, err := assemble(layers, cfg, arch, epoch)
	if err != nil {
		return Archive{}, fmt.Errorf("%s: %w", ref, err)
	}
	a, err := writeArchive(ctx, out, ref, img, epoch)
	if err != nil {
		return Archive{}, fmt.Errorf("%s: %w", ref, err)
	}
	return a, nil
}

func (b Builder) layerStore(outDir string) (layerStore, func(), error) {
	if b.LayerCache != "" {
		return layerStore{dir: b.LayerCache}, func() {}, nil
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return layerStore{}, nil, fmt.Errorf("make the output directory: %w", err)
	}
	d, err := os.MkdirTemp(outDir, ".layers-")
	if err != nil {
		return layerStore{}, nil, fmt.Errorf("make a scratch layer directory: %w", err)
	}
	return layerStore{dir: d}, func() { os.RemoveAll(d) }, nil
}

// regFromPath is a regular file of the image read from the build
// machine at pack time; its size is taken now, so a file that changes
// during the build fails it.
func regFromPath(name string, mode int64, src string) (file, error) {
	st, err := os.Stat(src)
	if err != nil {
		return file{}, fmt.Errorf("read %s: %w", src, err)
	}
	if !st.Mode().IsRegular() {
		return file{}, fmt.Errorf("%s is not a regular file", src)
	}
	f := reg(name, mode, 0, 0, nil)
	f.hdr.Size = st.Size()
	f.open = func() (io.ReadCloser, error) { return os.Open(src) }
	return f, nil
}
