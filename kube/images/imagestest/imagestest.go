// Package imagestest builds the spore and sporectl image archives for
// tests that run them on a real node (kube/kubetest's Node): from the
// sporectl binary of the code under test and the cached inputs of
// .ci/images.sh, which .ci/deps.sh exports (SPORECTL_IMAGE_*). Each test
// binary builds each image once; the layer cache makes every layer but
// sporectl's a copy.
package imagestest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sporectl/sporectl/kube/images"
)

// The inputs .ci/images.sh prints and .ci/deps.sh exports.
const (
	EnvRootfs            = "SPORECTL_IMAGE_ROOTFS"
	EnvClaudeCode        = "SPORECTL_IMAGE_CLAUDE_CODE"
	EnvClaudeCodeNative  = "SPORECTL_IMAGE_CLAUDE_CODE_NATIVE"
	EnvClaudeCodeVersion = "SPORECTL_IMAGE_CLAUDE_CODE_VERSION"
	EnvLayers            = "SPORECTL_IMAGE_LAYERS"
)

// caCerts is Debian's bundle; the sporectl image carries it.
const caCerts = "/etc/ssl/certs/ca-certificates.crt"

var (
	mu     sync.Mutex
	dir    string // one scratch directory per test binary
	built  = map[string]string{}
	binary string
)

// Sporectl returns the path of the sporectl image archive
// (images.SporectlName), built on first use.
func Sporectl(tb testing.TB) string {
	tb.Helper()
	return once(tb, "sporectl", func(ctx context.Context, b images.Builder, bin, out string) (images.Archive, error) {
		return b.Sporectl(ctx, images.SporectlInputs{Sporectl: bin, CACerts: caCerts}, out)
	})
}

// Spore returns the path of the spore image archive (images.SporeName,
// with Claude Code), built on first use. Without the inputs it skips, or
// fails when CI is set.
func Spore(tb testing.TB) string {
	tb.Helper()
	in := images.SporeInputs{
		Rootfs:            os.Getenv(EnvRootfs),
		ClaudeCode:        os.Getenv(EnvClaudeCode),
		ClaudeCodeNative:  os.Getenv(EnvClaudeCodeNative),
		ClaudeCodeVersion: os.Getenv(EnvClaudeCodeVersion),
	}
	var missing []string
	for name, v := range map[string]string{EnvRootfs: in.Rootfs, EnvClaudeCode: in.ClaudeCode, EnvClaudeCodeNative: in.ClaudeCodeNative, EnvClaudeCodeVersion: in.ClaudeCodeVersion} {
		if v == "" {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("the spore image's inputs are not set (%s); run: eval \"$(bash .ci/deps.sh)\"", strings.Join(missing, ", "))
		if os.Getenv("CI") != "" {
			tb.Fatalf("CI is set but %s", msg)
		}
		tb.Skip(msg)
	}
	return once(tb, "spore", func(ctx context.Context, b images.Builder, bin, out string) (images.Archive, error) {
		in.Sporectl = bin
		return b.Spore(ctx, in, out)
	})
}

type buildFunc func(ctx context.Context, b images.Builder, bin, out string) (images.Archive, error)

func once(tb testing.TB, name string, build buildFunc) string {
	tb.Helper()
	mu.Lock()
	defer mu.Unlock()
	if p, ok := built[name]; ok {
		return p
	}
	ctx := tb.Context()
	if dir == "" {
		// Not tb.TempDir: the archive outlives the test that built it, for
		// the next test of the same binary; RemoveAll, from TestMain,
		// removes it.
		d, err := os.MkdirTemp("", "sporectl-images-")
		if err != nil {
			tb.Fatalf("make a directory for the images: %v", err)
		}
		dir = d
	}
	if binary == "" {
		bin, err := buildSporectl(ctx, dir)
		if err != nil {
			tb.Fatalf("%v", err)
		}
		binary = bin
	}
	began := time.Now()
	a, err := build(ctx, images.Builder{LayerCache: os.Getenv(EnvLayers)}, binary, filepath.Join(dir, name+".tar"))
	if err != nil {
		tb.Fatalf("build the %s image: %v", name, err)
	}
	tb.Logf("%s image %s built in %s", name, a.Manifest, time.Since(began).Round(10*time.Millisecond))
	built[name] = a.Path
	return a.Path
}

// buildSporectl builds the static sporectl binary of the module this
// test runs in.
func buildSporectl(ctx context.Context, dir string) (string, error) {
	root, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return "", fmt.Errorf("find the module's directory: %w", err)
	}
	bin := filepath.Join(dir, "sporectl")
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "./cmd/sporectl")
	cmd.Dir = strings.TrimSpace(string(root))
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/sporectl: %w: %s", err, out)
	}
	return bin, nil
}

// RemoveAll removes the images built so far; a TestMain calls it after
// m.Run.
func RemoveAll() {
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		_ = os.RemoveAll(dir)
	}
	dir, binary = "", ""
	built = map[string]string{}
}
