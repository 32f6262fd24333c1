package kubetest

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"
)

// The images every real node has: the CRI sandbox ("pause") image pinned
// in containerd's config, and the probe image tests run pods from. Both
// hold the one static nodeprobe binary; they differ in the entrypoint.
const (
	PauseImage = "localhost/kubetest/pause:1"
	ProbeImage = "localhost/kubetest/nodeprobe:1"
)

// ImageFile is one regular file of an image's single layer.
type ImageFile struct {
	Path string // inside the image, without a leading slash
	Mode int64
	Data []byte
}

// ImageSpec describes a one-layer image for WriteOCIArchive.
type ImageSpec struct {
	Name       string // e.g. localhost/kubetest/nodeprobe:1
	Files      []ImageFile
	Dirs       []string // empty directories (tmp is made 1777)
	Entrypoint []string
	Env        []string
	User       string
}

// WriteOCIArchive writes spec as an OCI image layout in a tar, the form
// `ctr images import` and `docker load` accept with no registry. The
// config names os and architecture (ctr drops an image without them) and
// the index names the image both ways containerd reads. Every timestamp
// is zero, so the same spec gives the same digest.
func WriteOCIArchive(path string, spec ImageSpec) error {
	layer, err := layerTar(spec)
	if err != nil {
		return fmt.Errorf("image %s: layer: %w", spec.Name, err)
	}
	layerDigest := digestOf(layer)
	env := spec.Env
	if len(env) == 0 {
		env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	}
	config, err := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"created":      time.Unix(0, 0).UTC().Format(time.RFC3339),
		"config":       map[string]any{"Entrypoint": spec.Entrypoint, "Env": env, "User": spec.User},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{layerDigest}},
	})
	if err != nil {
		return err
	}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        descriptor("application/vnd.oci.image.config.v1+json", config),
		"layers":        []any{descriptor("application/vnd.oci.image.layer.v1.tar", layer)},
	})
	if err != nil {
		return err
	}
	tag := spec.Name
	if i := lastColon(spec.Name); i >= 0 {
		tag = spec.Name[i+1:]
	}
	md := descriptor("application/vnd.oci.image.manifest.v1+json", manifest)
	md["platform"] = map[string]string{"os": "linux", "architecture": runtime.GOARCH}
	md["annotations"] = map[string]string{
		"io.containerd.image.name":          spec.Name,
		"org.opencontainers.image.ref.name": tag,
	}
	index, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.index.v1+json",
		"manifests":     []any{md},
	})
	if err != nil {
		return err
	}

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: time.Unix(0, 0), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	for _, e := range []struct {
		name string
		data []byte
	}{
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", index},
		{"blobs/sha256/" + hexOf(layer), layer},
		{"blobs/sha256/" + hexOf(config), config},
		{"blobs/sha256/" + hexOf(manifest), manifest},
	} {
		if err := add(e.name, e.data); err != nil {
			return fmt.Errorf("image %s: archive: %w", spec.Name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("image %s: write %s: %w", spec.Name, path, err)
	}
	return nil
}

func layerTar(spec ImageSpec) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	for _, d := range spec.Dirs {
		mode := int64(0o755)
		if d == "tmp" {
			mode = 0o1777
		}
		if err := tw.WriteHeader(&tar.Header{Name: d + "/", Mode: mode, ModTime: epoch, Typeflag: tar.TypeDir}); err != nil {
			return nil, err
		}
	}
	for _, f := range spec.Files {
		if err := tw.WriteHeader(&tar.Header{Name: f.Path, Mode: f.Mode, Size: int64(len(f.Data)), ModTime: epoch, Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func descriptor(mediaType string, blob []byte) map[string]any {
	return map[string]any{"mediaType": mediaType, "digest": digestOf(blob), "size": len(blob)}
}

func hexOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func digestOf(b []byte) string { return "sha256:" + hexOf(b) }

// lastColon finds a tag's colon, not a registry port's.
func lastColon(ref string) int {
	for i := len(ref) - 1; i >= 0 && ref[i] != '/'; i-- {
		if ref[i] == ':' {
			return i
		}
	}
	return -1
}

// buildProbe compiles kube/kubetest/nodeprobe as a static binary into dir.
// It needs the Go toolchain and this package's source, which every test
// run of the repository has.
func buildProbe(ctx context.Context, dir string) (string, error) {
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("build nodeprobe: cannot locate the kubetest source")
	}
	out := filepath.Join(dir, "nodeprobe")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./nodeprobe")
	cmd.Dir = filepath.Dir(self)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build nodeprobe: %w: %s", err, b)
	}
	return out, nil
}

// writeNodeImages builds the probe and packs the pause and probe images
// into dir, returning the two archives' paths.
func writeNodeImages(ctx context.Context, dir string) ([]string, error) {
	bin, err := buildProbe(ctx, dir)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	files := []ImageFile{
		{Path: "nodeprobe", Mode: 0o755, Data: data},
		{Path: "etc/passwd", Mode: 0o644, Data: []byte("root:x:0:0:root:/root:/nodeprobe\nprobe:x:1000:1000:probe:/home/probe:/nodeprobe\n")},
		{Path: "etc/group", Mode: 0o644, Data: []byte("root:x:0:\nprobe:x:1000:\n")},
	}
	dirs := []string{"etc", "tmp", "home", "proc", "sys", "dev"}
	var paths []string
	for _, spec := range []ImageSpec{
		{Name: PauseImage, Files: files, Dirs: dirs, Entrypoint: []string{"/nodeprobe", "pause"}},
		{Name: ProbeImage, Files: files, Dirs: dirs, Entrypoint: []string{"/nodeprobe"}},
	} {
		p := filepath.Join(dir, filepath.Base(spec.Name[:lastColon(spec.Name)])+".tar")
		if err := WriteOCIArchive(p, spec); err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return paths, nil
}
