package images

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// Image is an archive read back the way an importer reads it: the OCI
// layout's index, the one image it names, its config and its flattened
// file system (headers, and the contents of the small files).
type Image struct {
	Name     string         // io.containerd.image.name
	RefName  string         // org.opencontainers.image.ref.name
	Manifest v1.Hash        // the manifest's digest
	Config   *v1.ConfigFile // the config
	Layers   int            // how many
	Files    map[string]*tar.Header
	small    map[string][]byte // contents of files under 1 MB
}

// Read reads an image archive with go-containerregistry's layout package
// (the tar unpacked into scratch, a directory it may fill).
func Read(ctx context.Context, archive, scratch string) (Image, error) {
	dir, err := os.MkdirTemp(scratch, ".read-")
	if err != nil {
		return Image{}, fmt.Errorf("read %s: %w", archive, err)
	}
	defer os.RemoveAll(dir)
	if err := untar(ctx, archive, dir); err != nil {
		return Image{}, fmt.Errorf("read %s: %w", archive, err)
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		return Image{}, fmt.Errorf("read %s as an OCI layout: %w", archive, err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return Image{}, fmt.Errorf("read %s's index: %w", archive, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return Image{}, fmt.Errorf("read %s's index: %w", archive, err)
	}
	if len(im.Manifests) != 1 {
		return Image{}, fmt.Errorf("%s's index names %d images, want 1", archive, len(im.Manifests))
	}
	d := im.Manifests[0]
	img, err := idx.Image(d.Digest)
	if err != nil {
		return Image{}, fmt.Errorf("read %s's image: %w", archive, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return Image{}, fmt.Errorf("read %s's config: %w", archive, err)
	}
	layers, err := img.Layers()
	if err != nil {
		return Image{}, fmt.Errorf("read %s's layers: %w", archive, err)
	}
	out := Image{
		Name: d.Annotations[annotationContainerdName], RefName: d.Annotations[annotationRefName],
		Manifest: d.Digest, Config: cf, Layers: len(layers),
		Files: map[string]*tar.Header{}, small: map[string][]byte{},
	}
	if d.Platform == nil || d.Platform.OS != cf.OS || d.Platform.Architecture != cf.Architecture {
		return Image{}, fmt.Errorf("%s: the index's platform %v is not the config's %s/%s", archive, d.Platform, cf.OS, cf.Architecture)
	}
	// Every blob against its digest, every layer's diffID against the
	// config's, the manifest against the config: what a registry or
	// containerd would refuse.
	if err := validate.Image(img); err != nil {
		return Image{}, fmt.Errorf("%s is not a valid image: %w", archive, err)
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Image{}, fmt.Errorf("read %s's files: %w", archive, err)
		}
		n := strings.TrimSuffix(path.Clean("/"+h.Name), "/")
		out.Files[n] = h
		if h.Typeflag == tar.TypeReg && h.Size < 1<<20 {
			b, err := io.ReadAll(tr)
			if err != nil {
				return Image{}, fmt.Errorf("read %s of %s: %w", n, archive, err)
			}
			out.small[n] = b
		}
	}
	return out, nil
}

// File is the content of a small regular file of the image ("/etc/passwd").
func (img Image) File(name string) ([]byte, bool) {
	b, ok := img.small[name]
	return b, ok
}

// Resolve follows symbolic links from name ("/bin/sh") to the entry
// they end at.
func (img Image) Resolve(name string) (string, *tar.Header, error) {
	lookup := func(n string) (*tar.Header, bool) { h, ok := img.Files[n]; return h, ok }
	n, err := resolve(lookup, name)
	if err != nil {
		return n, nil, err
	}
	return n, img.Files[n], nil
}

// Content is the header of the regular file holding name's bytes: name
// itself, or the target of a hard link.
func (img Image) Content(name string) (*tar.Header, error) {
	_, h, err := img.Resolve(name)
	if err != nil {
		return nil, err
	}
	if h.Typeflag == tar.TypeLink {
		t, ok := img.Files[path.Clean("/"+h.Linkname)]
		if !ok {
			return nil, fmt.Errorf("%s: hard link to %s, not in the image", name, h.Linkname)
		}
		h = t
	}
	if h.Typeflag != tar.TypeReg {
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	return h, nil
}

// Check says whether an image read back is what the builder promises:
// named ref, on linux with an architecture, the sporectl binary at
// SporectlPath as its entrypoint, run as a numeric non-root user whose
// home (when HOME is set) is in the image; for the spore image also its
// links, its user in /etc/passwd, Claude Code on the PATH and the
// userland it needs. `make images` runs it on what it built.
func (img Image) Check(ref string) error {
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if img.Name != ref || img.RefName != ref {
		fail("index names %q / %q, want %q", img.Name, img.RefName, ref)
	}
	cf := img.Config
	if cf.OS != "linux" || cf.Architecture == "" {
		fail("platform %q/%q: ctr imports only an image whose config has both", cf.OS, cf.Architecture)
	}
	if !slices.Equal(cf.Config.Entrypoint, []string{SporectlPath}) {
		fail("entrypoint %q, want [%s]", cf.Config.Entrypoint, SporectlPath)
	}
	if h, err := img.Content(SporectlPath); err != nil || h.Mode&0o111 == 0 {
		fail("%s is not an executable file (%v)", SporectlPath, err)
	}
	uid, _, _ := strings.Cut(cf.Config.User, ":")
	if n, err := strconv.Atoi(uid); err != nil || n == 0 {
		fail("user %q: want a numeric non-root UID (runAsNonRoot needs a number)", cf.Config.User)
	}
	env := map[string]string{}
	for _, e := range cf.Config.Env {
		k, v, _ := strings.Cut(e, "=")
		env[k] = v
	}
	if !strings.Contains(":"+env["PATH"]+":", ":"+path.Dir(SporectlPath)+":") {
		fail("PATH %q leaves out %s", env["PATH"], path.Dir(SporectlPath))
	}
	for _, name := range slices.Sorted(maps.Keys(img.Files)) {
		h := img.Files[name]
		if h.Typeflag != tar.TypeLink {
			continue
		}
		// Extractors chmod and chown the shared inode to the link's own
		// header, so it must say what its target's says.
		if t := img.Files[path.Clean("/"+h.Linkname)]; t != nil && (t.Mode != h.Mode || t.Uid != h.Uid || t.Gid != h.Gid) {
			fail("hard link %s has mode %o and owner %d:%d, its target %s %o and %d:%d: an extractor would give the file the link's", name, h.Mode, h.Uid, h.Gid, h.Linkname, t.Mode, t.Uid, t.Gid)
		}
	}
	if h, err := img.Content(CACertsPath); err != nil || h.Size == 0 {
		fail("no CA certificates at %s (%v)", CACertsPath, err)
	}
	switch ref {
	case SporeName:
		errs = append(errs, img.checkSpore(env)...)
	case SporectlName:
	default:
		fail("%s is neither image the builder makes", ref)
	}
	return errors.Join(errs...)
}

func (img Image) checkSpore(env map[string]string) []error {
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	cf := img.Config.Config
	if want := fmt.Sprintf("%d:%d", SporeUID, SporeUID); cf.User != want {
		fail("user %q, want %s (the pod's runAsUser)", cf.User, want)
	}
	if env["HOME"] != SporeHome || cf.WorkingDir != SporeHome {
		fail("HOME %q and working directory %q, want %s", env["HOME"], cf.WorkingDir, SporeHome)
	}
	if h := img.Files[SporeHome]; h == nil || h.Typeflag != tar.TypeDir || h.Uid != SporeUID {
		fail("%s is not a directory owned by %d", SporeHome, SporeUID)
	}
	if !slices.Equal(cf.Cmd, []string{"bridge"}) {
		fail("cmd %q, want [bridge]", cf.Cmd)
	}
	if _, ok := cf.ExposedPorts["8080/tcp"]; !ok {
		fail("the bridge port 8080/tcp is not exposed (%v)", cf.ExposedPorts)
	}
	for _, l := range SporeLinks {
		if got, _, err := img.Resolve(path.Join(path.Dir(SporectlPath), l)); err != nil || got != SporectlPath {
			fail("%s is not a link to %s (%v)", l, SporectlPath, err)
		}
	}
	passwd, _ := img.File("/etc/passwd")
	want := fmt.Sprintf("\n%s:x:%d:%d::%s:", SporeUser, SporeUID, SporeUID, SporeHome)
	if !strings.Contains("\n"+string(passwd), want) {
		fail("/etc/passwd has no %s user with UID %d and home %s", SporeUser, SporeUID, SporeHome)
	}
	if h, err := img.Content("/usr/local/bin/claude"); err != nil || h.Mode&0o111 == 0 {
		fail("claude is not an executable on the PATH (%v)", err)
	}
	for _, n := range SporeNeeds {
		if _, _, err := img.Resolve("/" + n); err != nil {
			fail("the userland lacks %s: %v", n, err)
		}
	}
	return errs
}

// untar unpacks an image archive's regular files and directories (all an
// OCI layout holds) under dir, refusing any name that leaves it.
func untar(ctx context.Context, archive, dir string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		n, err := cleanName(h.Name)
		if err != nil {
			return err
		}
		dest := filepath.Join(dir, filepath.FromSlash(n))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dest, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
				return err
			}
			w, err := os.Create(dest)
			if err != nil {
				return err
			}
			_, err = io.Copy(w, tr)
			if cerr := w.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("entry %s: an image archive holds only files and directories", n)
		}
	}
}
