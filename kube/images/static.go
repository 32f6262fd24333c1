package images

import (
	"context"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Static is a one-layer image of one static binary and a few files, for
// what runs with no userland: the real node's CRI sandbox ("pause") and
// probe images in kube/kubetest. Owned by root; the builder's rules
// (sorted entries, one epoch, numeric owners) make the same inputs the
// same digest.
type Static struct {
	// Binary is a static executable, placed at BinaryPath (inside the
	// image, no leading slash) with mode 0755.
	Binary, BinaryPath string
	// Files are more regular files (mode 0644) by path, no leading slash.
	Files map[string]string
	// Dirs are empty directories (0755; "tmp" is 1777).
	Dirs       []string
	Entrypoint []string
}

// Static writes the image ref of in to out.
func (b Builder) Static(ctx context.Context, ref string, in Static, out string) (Archive, error) {
	arch, err := staticArch(in.Binary)
	if err != nil {
		return Archive{}, err
	}
	if in.BinaryPath == "" || strings.HasPrefix(in.BinaryPath, "/") {
		return Archive{}, fmt.Errorf("image %s: binary path %q: want a path inside the image without a leading slash", ref, in.BinaryPath)
	}
	bin, err := regFromPath(in.BinaryPath, 0o755, in.Binary)
	if err != nil {
		return Archive{}, err
	}
	files := []file{bin}
	for _, name := range slices.Sorted(maps.Keys(in.Files)) {
		files = append(files, reg(name, 0o644, 0, 0, []byte(in.Files[name])))
	}
	for _, d := range in.Dirs {
		mode := int64(0o755)
		if path.Clean(d) == "tmp" {
			mode = 0o1777
		}
		files = append(files, dir(d, mode, 0, 0))
	}
	return b.build(ctx, out, ref, arch, v1.Config{
		Env:        []string{"PATH=" + defaultPATH},
		Entrypoint: in.Entrypoint,
		WorkingDir: "/",
	}, []layerGroup{{files: withParents(files), what: path.Base(in.BinaryPath)}})
}
