package images_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/kube/images"
)

// A static image (the real node's pause and probe images): one layer of
// the binary, its files and directories, root's; named both ways
// containerd reads; linux/<arch>; the same inputs give the same digest.
func TestStaticImage(t *testing.T) {
	ctx := context.Background()
	in := images.Static{
		Binary: staticSporectl(t), BinaryPath: "probe",
		Files:      map[string]string{"etc/passwd": "root:x:0:0:root:/root:/probe\n"},
		Dirs:       []string{"tmp", "proc"},
		Entrypoint: []string{"/probe", "pause"},
	}
	const ref = "localhost/test/probe:1"
	a, err := images.Builder{}.Static(ctx, ref, in, filepath.Join(t.TempDir(), "probe.tar"))
	require.NoError(t, err)
	b, err := images.Builder{}.Static(ctx, ref, in, filepath.Join(t.TempDir(), "probe.tar"))
	require.NoError(t, err)
	assert.Equal(t, a.Manifest, b.Manifest, "same inputs, same digest")

	img := readBack(t, a)
	assert.Equal(t, ref, img.Name)
	assert.Equal(t, ref, img.RefName)
	assert.Equal(t, "linux", img.Config.OS)
	assert.Equal(t, goarch(), img.Config.Architecture)
	assert.Equal(t, []string{"/probe", "pause"}, img.Config.Config.Entrypoint)
	assert.Equal(t, 1, img.Layers)
	require.NotNil(t, img.Files["/probe"])
	assert.Equal(t, int64(0o755), img.Files["/probe"].Mode&0o7777)
	passwd, ok := img.File("/etc/passwd")
	require.True(t, ok)
	assert.Equal(t, "root:x:0:0:root:/root:/probe\n", string(passwd))
	assert.Equal(t, int64(0o1777), img.Files["/tmp"].Mode&0o7777)
	assert.Equal(t, int64(0o755), img.Files["/proc"].Mode&0o7777)

	in.BinaryPath = "/probe"
	_, err = images.Builder{}.Static(ctx, ref, in, filepath.Join(t.TempDir(), "bad.tar"))
	require.ErrorContains(t, err, "without a leading slash")
	in.BinaryPath, in.Binary = "probe", dynamicBinary(t)
	_, err = images.Builder{}.Static(ctx, ref, in, filepath.Join(t.TempDir(), "bad.tar"))
	require.Error(t, err, "a dynamic binary would not run on an empty base")
}
