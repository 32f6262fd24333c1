package images_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/kube/images"
)

const claudeVersion = "9.9.9"

var (
	buildOnce, tinyOnce sync.Once
	builtBin, tinyBin   string
	buildErr, tinyErr   error
	binDir              string
)

func TestMain(m *testing.M) {
	d, err := os.MkdirTemp("", "images-test-")
	if err != nil {
		panic(err)
	}
	binDir = d
	code := m.Run()
	os.RemoveAll(d)
	os.Exit(code)
}

// staticSporectl is the real sporectl built as `make images` builds it
// (static, trimmed), once per test run.
func staticSporectl(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		builtBin = filepath.Join(binDir, "sporectl")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s", "-o", builtBin, "github.com/sporectl/sporectl/cmd/sporectl")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = err
			builtBin = string(out)
		}
	})
	require.NoError(t, buildErr, builtBin)
	return builtBin
}

// tinyStatic is a small static executable, for the spore image's
// fixture builds: packing the real 55 MB binary in each would only make
// them slow.
func tinyStatic(t *testing.T) string {
	t.Helper()
	tinyOnce.Do(func() {
		tinyBin = filepath.Join(binDir, "tiny")
		cmd := exec.Command("go", "build", "-o", tinyBin, "./testdata/static")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
		if out, err := cmd.CombinedOutput(); err != nil {
			tinyErr, tinyBin = err, string(out)
		}
	})
	require.NoError(t, tinyErr, tinyBin)
	return tinyBin
}

func goarch() string { return runtime.GOARCH }

// caCerts is the build machine's bundle where there is one, else a stand-in.
func caCerts(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/etc/ssl/certs/ca-certificates.crt"); err == nil {
		return "/etc/ssl/certs/ca-certificates.crt"
	}
	p := filepath.Join(t.TempDir(), "ca.crt")
	require.NoError(t, os.WriteFile(p, []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"), 0o644))
	return p
}

// entry is one entry of a fixture tar.
type entry struct {
	name, link string
	typ        byte
	mode       int64
	uid, gid   int
	data       string
}

// writeTar writes entries in the order given, each with mtime and the
// owner names a real tool would leave, gzip'd when gz.
func writeTar(t *testing.T, path string, entries []entry, mtime time.Time, gz bool) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		h := &tar.Header{Typeflag: typ, Name: e.name, Linkname: e.link, Mode: e.mode, Uid: e.uid, Gid: e.gid,
			Uname: "builder", Gname: "builder", ModTime: mtime, Size: int64(len(e.data))}
		if typ != tar.TypeReg {
			h.Size = 0
		}
		require.NoError(t, tw.WriteHeader(h))
		if typ == tar.TypeReg {
			_, err := tw.Write([]byte(e.data))
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	b := buf.Bytes()
	if gz {
		var z bytes.Buffer
		zw := gzip.NewWriter(&z)
		_, err := zw.Write(b)
		require.NoError(t, err)
		require.NoError(t, zw.Close())
		b = z.Bytes()
	}
	require.NoError(t, os.WriteFile(path, b, 0o644))
}

// rootfsEntries is a tiny stand-in for the Debian root filesystem: the
// programs the spore needs (as scripts), the account files with Debian's
// owners and modes, and a hard link whose target sorts after it.
func rootfsEntries() []entry {
	return []entry{
		{name: "./", typ: tar.TypeDir, mode: 0o755},
		{name: "./usr/", typ: tar.TypeDir, mode: 0o755},
		{name: "./usr/bin/", typ: tar.TypeDir, mode: 0o755},
		{name: "./usr/bin/perl5.36.0", typ: tar.TypeReg, mode: 0o755, data: "#!/bin/sh\necho perl\n"},
		{name: "./usr/bin/perl", typ: tar.TypeLink, link: "./usr/bin/perl5.36.0", mode: 0o755},
		{name: "./usr/bin/git", mode: 0o755, data: "#!/bin/sh\necho git\n"},
		{name: "./usr/bin/rg", mode: 0o755, data: "#!/bin/sh\necho rg\n"},
		{name: "./usr/bin/ssh", mode: 0o755, data: "#!/bin/sh\necho ssh\n"},
		{name: "./usr/bin/node", mode: 0o755, data: "#!/bin/sh\necho node\n"},
		{name: "./usr/bin/bash", mode: 0o755, data: "#!/bin/sh\n"},
		{name: "./usr/bin/dash", mode: 0o755, data: "#!/bin/sh\n"},
		{name: "./bin", typ: tar.TypeSymlink, link: "usr/bin", mode: 0o777},
		{name: "./usr/bin/sh", typ: tar.TypeSymlink, link: "dash", mode: 0o777},
		{name: "./etc/", typ: tar.TypeDir, mode: 0o755},
		{name: "./etc/passwd", mode: 0o644, data: "root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"},
		{name: "./etc/group", mode: 0o644, data: "root:x:0:\nshadow:x:42:\n"},
		{name: "./etc/shadow", mode: 0o640, gid: 42, data: "root:*:19000:0:99999:7:::\n"},
		{name: "./etc/ssl/", typ: tar.TypeDir, mode: 0o755},
		{name: "./etc/ssl/certs/", typ: tar.TypeDir, mode: 0o755},
		{name: "./etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: "-----BEGIN CERTIFICATE-----\n"},
		{name: "./dev/", typ: tar.TypeDir, mode: 0o755},
		{name: "./dev/null", typ: tar.TypeChar, mode: 0o666},
		{name: "./home/", typ: tar.TypeDir, mode: 0o755},
	}
}

func npmEntries(name, version string, extra map[string]any, files []entry) []entry {
	pkg := map[string]any{"name": name, "version": version}
	for k, v := range extra {
		pkg[k] = v
	}
	b, _ := json.Marshal(pkg)
	// npm's tarballs: files only, under package/, the publisher's ids.
	return append([]entry{{name: "package/package.json", mode: 0o644, uid: 501, gid: 20, data: string(b)}}, files...)
}

// fixture is a set of spore image inputs in a directory.
type fixture struct {
	dir string
	in  images.SporeInputs
}

func nativeName() string {
	if goarch() == "arm64" {
		return "@anthropic-ai/claude-code-linux-arm64"
	}
	return "@anthropic-ai/claude-code-linux-x64"
}

// newFixture writes the inputs; change edits the entries first.
func newFixture(t *testing.T, mtime time.Time, change func(rootfs, wrapper, native *[]entry)) fixture {
	t.Helper()
	dir := t.TempDir()
	rootfs := rootfsEntries()
	wrapper := npmEntries("@anthropic-ai/claude-code", claudeVersion, map[string]any{
		"bin":                  map[string]string{"claude": "bin/claude.exe"},
		"optionalDependencies": map[string]string{nativeName(): claudeVersion},
	}, []entry{
		{name: "package/bin/claude.exe", mode: 0o755, uid: 501, data: "placeholder"},
		{name: "package/install.cjs", mode: 0o644, uid: 501, data: "// postinstall"},
	})
	native := npmEntries(nativeName(), claudeVersion, nil, []entry{
		{name: "package/claude", mode: 0o755, uid: 501, data: "\x7fELF native claude"},
	})
	if change != nil {
		change(&rootfs, &wrapper, &native)
	}
	f := fixture{dir: dir, in: images.SporeInputs{
		Sporectl:          tinyStatic(t),
		Rootfs:            filepath.Join(dir, "rootfs.tar"),
		ClaudeCode:        filepath.Join(dir, "claude-code.tgz"),
		ClaudeCodeNative:  filepath.Join(dir, "claude-code-native.tgz"),
		ClaudeCodeVersion: claudeVersion,
	}}
	writeTar(t, f.in.Rootfs, rootfs, mtime, false)
	writeTar(t, f.in.ClaudeCode, wrapper, mtime, true)
	writeTar(t, f.in.ClaudeCodeNative, native, mtime, true)
	return f
}

func readBack(t *testing.T, a images.Archive) images.Image {
	t.Helper()
	img, err := images.Read(context.Background(), a.Path, t.TempDir())
	require.NoError(t, err)
	return img
}
