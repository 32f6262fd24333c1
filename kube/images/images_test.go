package images_test

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/kube/images"
)

func fileSHA(t *testing.T, p string) string {
	t.Helper()
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	h := sha256.New()
	_, err = io.Copy(h, f)
	require.NoError(t, err)
	return hex.EncodeToString(h.Sum(nil))
}

// The sporectl image, built from the real static binary and read back
// with go-containerregistry as an importer reads it: named in its index
// with both annotations, linux/<arch>, UID 1000 (serve.yaml's runAsUser),
// the binary as entrypoint, the CA bundle; a second build in another
// directory gives the same archive byte for byte.
func TestSporectlImage(t *testing.T) {
	ctx := context.Background()
	bin, certs := staticSporectl(t), caCerts(t)
	var archives []images.Archive
	for range 2 {
		a, err := images.Builder{}.Sporectl(ctx, images.SporectlInputs{Sporectl: bin, CACerts: certs}, filepath.Join(t.TempDir(), "sporectl.tar"))
		require.NoError(t, err)
		archives = append(archives, a)
	}
	require.Equal(t, archives[0].Manifest, archives[1].Manifest, "same inputs, same digest")
	require.Equal(t, fileSHA(t, archives[0].Path), fileSHA(t, archives[1].Path), "same inputs, same archive")

	img := readBack(t, archives[0])
	require.NoError(t, img.Check(images.SporectlName))
	assert.Equal(t, "ghcr.io/sporectl/sporectl:latest", img.Name)
	assert.Equal(t, img.Name, img.RefName)
	assert.Equal(t, archives[0].Manifest, img.Manifest)
	cf := img.Config
	assert.Equal(t, "linux", cf.OS)
	assert.Equal(t, goarch(), cf.Architecture)
	assert.Equal(t, "1000:1000", cf.Config.User)
	assert.Equal(t, []string{"/usr/local/bin/sporectl"}, cf.Config.Entrypoint)
	assert.Empty(t, cf.Config.Cmd, "serve and reconcile give their verb as args")
	assert.Equal(t, time.Unix(0, 0).UTC(), cf.Created.Time.UTC(), "no build time in the config")
	assert.Equal(t, 1, img.Layers)

	h := img.Files["/usr/local/bin/sporectl"]
	require.NotNil(t, h)
	assert.Equal(t, int64(0o755), h.Mode&0o7777)
	assert.Equal(t, [2]int{0, 0}, [2]int{h.Uid, h.Gid})
	st, err := os.Stat(bin)
	require.NoError(t, err)
	assert.Equal(t, st.Size(), h.Size)
	certHdr := img.Files["/etc/ssl/certs/ca-certificates.crt"]
	require.NotNil(t, certHdr)
	cst, err := os.Stat(certs)
	require.NoError(t, err)
	assert.Equal(t, cst.Size(), certHdr.Size)
	passwd, ok := img.File("/etc/passwd")
	require.True(t, ok)
	assert.Contains(t, string(passwd), "sporectl:x:1000:1000:")
	assert.Equal(t, 1000, img.Files["/home/sporectl"].Uid)
	for name, hdr := range img.Files {
		assert.True(t, hdr.ModTime.Equal(time.Unix(0, 0)), "%s: mtime %v", name, hdr.ModTime)
		assert.Empty(t, hdr.Uname+hdr.Gname, "%s: owner names", name)
	}

	// The Docker-style manifest.json beside the layout (docker load,
	// crane push of a tar) names the same config and layers.
	dimg, err := tarball.ImageFromPath(archives[0].Path, nil)
	require.NoError(t, err)
	dcfg, err := dimg.ConfigName()
	require.NoError(t, err)
	assert.Equal(t, img.Config.RootFS.DiffIDs, mustConfig(t, dimg).RootFS.DiffIDs)
	assert.Equal(t, "ghcr.io/sporectl/sporectl:latest", mustTag(t, archives[0].Path))
	oc, err := os.ReadFile(archives[0].Path)
	require.NoError(t, err)
	assert.Contains(t, string(oc), "blobs/sha256/"+dcfg.Hex)
}

// SOURCE_DATE_EPOCH's time is every file's and the config's, and changes
// the digest: the digest depends on it and on nothing else of the build.
func TestEpochIsTheOnlyTime(t *testing.T) {
	ctx := context.Background()
	in := images.SporectlInputs{Sporectl: staticSporectl(t), CACerts: caCerts(t)}
	zero, err := images.Builder{}.Sporectl(ctx, in, filepath.Join(t.TempDir(), "a.tar"))
	require.NoError(t, err)
	epoch := time.Unix(1700000000, 0)
	later, err := images.Builder{Epoch: epoch}.Sporectl(ctx, in, filepath.Join(t.TempDir(), "b.tar"))
	require.NoError(t, err)
	require.NotEqual(t, zero.Manifest, later.Manifest)
	img := readBack(t, later)
	assert.True(t, img.Config.Created.Time.Equal(epoch))
	for name, h := range img.Files {
		assert.True(t, h.ModTime.Equal(epoch), "%s: %v", name, h.ModTime)
	}
}

// The spore image from a tiny root filesystem through the same path as
// the real one: three layers; sporectl with its links on the PATH;
// Claude Code laid out as npm -g and its install script would; the spore
// user (UID 1000, HOME /home/spore) added with the account files' owners
// and modes kept; devices dropped; hard links ordered so the target
// comes first. Entries given in another order, with other mtimes and
// owner names, give the same digest.
func TestSporeImageFromFixture(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, time.Unix(1234567890, 0), nil)
	a, err := images.Builder{}.Spore(ctx, f.in, filepath.Join(f.dir, "out", "spore.tar"))
	require.NoError(t, err)
	img := readBack(t, a)
	require.NoError(t, img.Check(images.SporeName))

	cf := img.Config
	assert.Equal(t, "ghcr.io/sporectl/spore:latest", img.Name)
	assert.Equal(t, 3, img.Layers)
	assert.Equal(t, "1000:1000", cf.Config.User)
	assert.Equal(t, []string{"/usr/local/bin/sporectl"}, cf.Config.Entrypoint)
	assert.Equal(t, []string{"bridge"}, cf.Config.Cmd)
	assert.Equal(t, "/home/spore", cf.Config.WorkingDir)
	assert.Contains(t, cf.Config.Env, "HOME=/home/spore")
	assert.Contains(t, cf.Config.ExposedPorts, "8080/tcp")

	for _, l := range []string{"/usr/local/bin/mycologist", "/usr/local/bin/swarm"} {
		got, _, err := img.Resolve(l)
		require.NoError(t, err)
		assert.Equal(t, "/usr/local/bin/sporectl", got, l)
	}
	claude, h, err := img.Resolve("/usr/local/bin/claude")
	require.NoError(t, err)
	assert.Equal(t, "/usr/local/lib/node_modules/@anthropic-ai/claude-code/bin/claude.exe", claude)
	native := "/usr/local/lib/node_modules/" + nativeName() + "/claude"
	assert.Equal(t, byte(tar.TypeLink), h.Typeflag, "claude.exe is the native binary, as the install script links it")
	assert.Equal(t, strings.TrimPrefix(native, "/"), h.Linkname)
	assert.Equal(t, int64(0o755), h.Mode&0o7777, "containerd chmods the shared inode to the link's own mode")
	assert.Equal(t, int64(0o755), img.Files[native].Mode&0o7777)
	assert.Equal(t, 0, img.Files[native].Uid, "the publisher's ids are not kept")

	passwd, _ := img.File("/etc/passwd")
	assert.Equal(t, "root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\nspore:x:1000:1000::/home/spore:/bin/bash\n", string(passwd))
	group, _ := img.File("/etc/group")
	assert.Contains(t, string(group), "\nspore:x:1000:\n")
	shadow := img.Files["/etc/shadow"]
	assert.Equal(t, [2]int64{0o640, 42}, [2]int64{shadow.Mode & 0o7777, int64(shadow.Gid)})
	sb, _ := img.File("/etc/shadow")
	assert.Contains(t, string(sb), "\nspore:!:")
	assert.Equal(t, [2]int{1000, 1000}, [2]int{img.Files["/home/spore"].Uid, img.Files["/home/spore"].Gid})
	assert.NotContains(t, img.Files, "/dev/null")
	perl, perl5 := img.Files["/usr/bin/perl"], img.Files["/usr/bin/perl5.36.0"]
	require.NotNil(t, perl)
	assert.Equal(t, byte(tar.TypeLink), perl5.Typeflag, "the first name of a hard-link group holds the bytes")
	assert.Equal(t, "usr/bin/perl", perl5.Linkname)

	again := newFixture(t, time.Unix(42, 0), func(rootfs, wrapper, native *[]entry) {
		for i, j := 0, len(*rootfs)-1; i < j; i, j = i+1, j-1 {
			(*rootfs)[i], (*rootfs)[j] = (*rootfs)[j], (*rootfs)[i]
		}
	})
	b, err := images.Builder{}.Spore(ctx, again.in, filepath.Join(again.dir, "out", "spore.tar"))
	require.NoError(t, err)
	assert.Equal(t, a.Manifest, b.Manifest, "order and mtimes of the inputs do not reach the image")

	changed := newFixture(t, time.Unix(42, 0), func(rootfs, _, _ *[]entry) {
		(*rootfs)[5].data = "#!/bin/sh\necho git 2\n"
	})
	c, err := images.Builder{}.Spore(ctx, changed.in, filepath.Join(changed.dir, "out", "spore.tar"))
	require.NoError(t, err)
	assert.NotEqual(t, a.Manifest, c.Manifest, "a changed file changes the digest")
}

// A warm build finds its layers in the cache and writes none again; the
// archive is the same.
func TestLayerCache(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, time.Unix(0, 0), nil)
	cache := t.TempDir()
	b := images.Builder{LayerCache: cache}
	a, err := b.Spore(ctx, f.in, filepath.Join(f.dir, "a", "spore.tar"))
	require.NoError(t, err)
	blobs, err := filepath.Glob(filepath.Join(cache, "sha256-*.tar.gz"))
	require.NoError(t, err)
	require.Len(t, blobs, 3)
	before := map[string]time.Time{}
	for _, p := range blobs {
		st, err := os.Stat(p)
		require.NoError(t, err)
		before[p] = st.ModTime()
		require.NoError(t, os.Chtimes(p, time.Unix(1, 0), time.Unix(1, 0)))
	}
	w, err := b.Spore(ctx, f.in, filepath.Join(f.dir, "b", "spore.tar"))
	require.NoError(t, err)
	assert.Equal(t, a.Manifest, w.Manifest)
	assert.Equal(t, fileSHA(t, a.Path), fileSHA(t, w.Path))
	for p := range before {
		st, err := os.Stat(p)
		require.NoError(t, err)
		assert.True(t, st.ModTime().Equal(time.Unix(1, 0)), "%s was written again", p)
	}
	cold, err := images.Builder{}.Spore(ctx, f.in, filepath.Join(f.dir, "c", "spore.tar"))
	require.NoError(t, err)
	assert.Equal(t, a.Manifest, cold.Manifest, "with or without the cache")
	left, err := filepath.Glob(filepath.Join(f.dir, "c", ".*"))
	require.NoError(t, err)
	assert.Empty(t, left, "no scratch files left beside the archive")

	require.NoError(t, os.WriteFile(blobs[0]+".digest", []byte("damaged\n"), 0o644))
	_, err = b.Spore(ctx, f.in, filepath.Join(f.dir, "d", "spore.tar"))
	require.Error(t, err, "a damaged cache entry is not used")
	assert.Contains(t, err.Error(), "digest file is damaged")
}

// What the builder refuses, each with an error that says what is wrong.
func TestSporeImageRefuses(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		change func(rootfs, wrapper, native *[]entry)
		in     func(in *images.SporeInputs)
		want   string
	}{
		{name: "a dynamically linked sporectl", in: func(in *images.SporeInputs) { in.Sporectl = dynamicBinary(t) }, want: "CGO_ENABLED=0"},
		{name: "not an executable", in: func(in *images.SporeInputs) { in.Sporectl = in.Rootfs }, want: "not an ELF executable"},
		{name: "no git", change: func(r, _, _ *[]entry) { drop(r, "./usr/bin/git") }, want: "usr/bin/git missing"},
		{name: "no shell behind the link", change: func(r, _, _ *[]entry) { drop(r, "./usr/bin/dash") }, want: "bin/sh"},
		{name: "UID 1000 taken", change: func(r, _, _ *[]entry) {
			(*r)[14].data += "node:x:1000:1000::/home/node:/bin/bash\n"
		}, want: `already has "node:x:1000`},
		{name: "no passwd", change: func(r, _, _ *[]entry) { drop(r, "./etc/passwd") }, want: "no etc/passwd"},
		{name: "another claude version", in: func(in *images.SporeInputs) { in.ClaudeCodeVersion = "1.0.0" }, want: "want the pinned 1.0.0"},
		{name: "the native package for another machine", change: func(_, _, n *[]entry) {
			(*n)[0] = npmEntries("@anthropic-ai/claude-code-win32-x64", claudeVersion, nil, nil)[0]
		}, want: "claude-code-win32-x64"},
		{name: "an npm entry outside package/", change: func(_, w, _ *[]entry) {
			*w = append(*w, entry{name: "package/../../etc/x", data: "x", mode: 0o644})
		}, want: "outside package/"},
		{name: "a rootfs entry climbing out", change: func(r, _, _ *[]entry) {
			*r = append(*r, entry{name: "../../etc/evil", data: "x", mode: 0o644})
		}, want: "climbs out of the root"},
		{name: "a hard link to nothing", change: func(r, _, _ *[]entry) {
			*r = append(*r, entry{name: "./usr/bin/x", typ: tar.TypeLink, link: "./usr/bin/nothing"})
		}, want: "hard link usr/bin/x"},
		{name: "a name twice", change: func(r, _, _ *[]entry) {
			*r = append(*r, entry{name: "usr/bin/git", data: "again", mode: 0o755})
		}, want: "usr/bin/git is in the layer twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, time.Unix(0, 0), tc.change)
			if tc.in != nil {
				tc.in(&f.in)
			}
			out := filepath.Join(f.dir, "out", "spore.tar")
			_, err := images.Builder{}.Spore(ctx, f.in, out)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NoFileExists(t, out, "no archive from a refused build")
		})
	}
}

func drop(entries *[]entry, name string) {
	out := (*entries)[:0]
	for _, e := range *entries {
		if e.name != name {
			out = append(out, e)
		}
	}
	*entries = out
}

// dynamicBinary is an executable with an ELF interpreter: the go tool
// itself is static, so a small cgo-free but dynamic stand-in is made by
// copying the system's /bin/true when it has an interpreter.
func dynamicBinary(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/bin/true", "/usr/bin/true", "/bin/sh"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatal("no dynamically linked system binary to test with")
	return ""
}

func mustConfig(t *testing.T, img v1.Image) *v1.ConfigFile {
	t.Helper()
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	return cf
}

// mustTag is the one tag the archive's manifest.json gives its image.
func mustTag(t *testing.T, archive string) string {
	t.Helper()
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(archive) })
	require.NoError(t, err)
	require.Len(t, m, 1)
	require.Len(t, m[0].RepoTags, 1)
	return m[0].RepoTags[0]
}
