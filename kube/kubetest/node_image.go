package kubetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/sporectl/sporectl/kube/images"
)

// The images every real node has: the CRI sandbox ("pause") image pinned
// in containerd's config, and the probe image tests run pods from. Both
// hold the one static nodeprobe binary; they differ in the entrypoint.
const (
	PauseImage = "localhost/kubetest/pause:1"
	ProbeImage = "localhost/kubetest/nodeprobe:1"
)

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
// into dir with kube/images (as `make images` packs sporectl's),
// returning the two archives' paths.
func writeNodeImages(ctx context.Context, dir string) ([]string, error) {
	bin, err := buildProbe(ctx, dir)
	if err != nil {
		return nil, err
	}
	in := images.Static{
		Binary: bin, BinaryPath: "nodeprobe",
		Files: map[string]string{
			"etc/passwd": "root:x:0:0:root:/root:/nodeprobe\nprobe:x:1000:1000:probe:/home/probe:/nodeprobe\n",
			"etc/group":  "root:x:0:\nprobe:x:1000:\n",
		},
		Dirs: []string{"tmp", "home", "proc", "sys", "dev"},
	}
	var paths []string
	for _, img := range []struct {
		ref        string
		entrypoint []string
	}{
		{PauseImage, []string{"/nodeprobe", "pause"}},
		{ProbeImage, []string{"/nodeprobe"}},
	} {
		in.Entrypoint = img.entrypoint
		name := img.ref[strings.LastIndex(img.ref, "/")+1 : strings.LastIndex(img.ref, ":")]
		a, err := images.Builder{}.Static(ctx, img.ref, in, filepath.Join(dir, name+".tar"))
		if err != nil {
			return nil, fmt.Errorf("the node's %s image: %w", img.ref, err)
		}
		paths = append(paths, a.Path)
	}
	return paths, nil
}
