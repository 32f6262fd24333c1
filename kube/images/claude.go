package images

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"strings"
)

// nodeModules is where `npm install -g` puts packages on Debian and in
// the node images the Dockerfile starts from.
const nodeModules = "usr/local/lib/node_modules"

// claudeNative is the package holding Claude Code's native binary for an
// image architecture (its install script's names).
var claudeNative = map[string]string{
	"amd64": "@anthropic-ai/claude-code-linux-x64",
	"arm64": "@anthropic-ai/claude-code-linux-arm64",
}

type npmPackage struct {
	Name                 string            `json:"name"`
	Version              string            `json:"version"`
	Bin                  map[string]string `json:"bin"`
	OptionalDependencies map[string]string `json:"optionalDependencies"`
}

// claudeCodeFiles unpacks Claude Code's two npm tarballs as `npm install
// -g` followed by its install script would leave them, with no Node.js
// run: the wrapper package and the native one under node_modules, the
// wrapper's bin/claude.exe the native binary (a hard link, as the install
// script makes), and /usr/local/bin/claude a link to it. The packages'
// versions must be the pinned one.
func claudeCodeFiles(ctx context.Context, sp *spool, wrapperTgz, nativeTgz, version, arch string) ([]file, error) {
	nativeName, ok := claudeNative[arch]
	if !ok {
		return nil, fmt.Errorf("no Claude Code native package for architecture %s", arch)
	}
	wrapper, wpkg, err := npmFiles(ctx, sp, wrapperTgz)
	if err != nil {
		return nil, err
	}
	native, npkg, err := npmFiles(ctx, sp, nativeTgz)
	if err != nil {
		return nil, err
	}
	switch {
	case wpkg.Name != "@anthropic-ai/claude-code":
		return nil, fmt.Errorf("claude code tarball %s is package %q, want @anthropic-ai/claude-code", wrapperTgz, wpkg.Name)
	case npkg.Name != nativeName:
		return nil, fmt.Errorf("claude code native tarball %s is package %q, want %s for %s", nativeTgz, npkg.Name, nativeName, arch)
	case wpkg.Version != version || npkg.Version != version:
		return nil, fmt.Errorf("claude code tarballs are versions %s and %s, want the pinned %s", wpkg.Version, npkg.Version, version)
	case wpkg.OptionalDependencies[nativeName] != version:
		return nil, fmt.Errorf("claude code %s does not name %s@%s as its native package", version, nativeName, version)
	}
	binRel, ok := wpkg.Bin["claude"]
	if !ok {
		return nil, fmt.Errorf("claude code %s: its package.json names no claude binary", version)
	}
	wdir, ndir := path.Join(nodeModules, wpkg.Name), path.Join(nodeModules, npkg.Name)
	bin, nativeBin := path.Join(wdir, binRel), path.Join(ndir, "claude")
	found := false
	for _, f := range native {
		found = found || (f.hdr.Name == nativeBin && f.hdr.Typeflag == tar.TypeReg)
	}
	if !found {
		return nil, fmt.Errorf("claude code native tarball %s has no package/claude", nativeTgz)
	}

	var out []file
	for _, f := range append(wrapper, native...) {
		if f.hdr.Name == bin {
			continue // the placeholder the install script replaces
		}
		f.hdr.Uid, f.hdr.Gid = 0, 0 // the publisher's ids mean nothing here
		if f.hdr.Name == nativeBin || f.hdr.Mode&0o111 != 0 {
			f.hdr.Mode = 0o755
		} else {
			f.hdr.Mode = 0o644
		}
		out = append(out, f)
	}
	// The link carries the binary's mode: containerd's and Docker's
	// appliers chmod the path of a hard link to its header's mode, which
	// is the shared inode's, so a mode of 0 left claude unexecutable.
	out = append(out, file{hdr: tar.Header{Typeflag: tar.TypeLink, Name: bin, Linkname: nativeBin, Mode: 0o755}})
	rel, err := relPath("usr/local/bin", bin)
	if err != nil {
		return nil, err
	}
	out = append(out, symlink("usr/local/bin/claude", rel))
	return withParents(out), nil
}

// npmFiles reads an npm tarball's entries into node_modules/<its name>.
func npmFiles(ctx context.Context, sp *spool, tgz string) ([]file, npmPackage, error) {
	r, err := os.Open(tgz)
	if err != nil {
		return nil, npmPackage{}, fmt.Errorf("open npm tarball: %w", err)
	}
	defer r.Close()
	// The tarball's entries are under package/; where they go is the
	// name its package.json gives.
	files, err := sp.readTar(ctx, r, tgz, under("package"))
	if err != nil {
		return nil, npmPackage{}, err
	}
	var pkg npmPackage
	for _, f := range files {
		if f.hdr.Name == "package/package.json" {
			b, err := readAll(f)
			if err != nil {
				return nil, npmPackage{}, fmt.Errorf("read package.json of %s: %w", tgz, err)
			}
			if err := json.Unmarshal(b, &pkg); err != nil {
				return nil, npmPackage{}, fmt.Errorf("package.json of %s: %w", tgz, err)
			}
		}
	}
	if n, err := cleanName(pkg.Name); err != nil || n != pkg.Name || strings.HasPrefix(n, ".") {
		return nil, npmPackage{}, fmt.Errorf("npm tarball %s: package.json names no usable package (%q)", tgz, pkg.Name)
	}
	dest := path.Join(nodeModules, pkg.Name)
	for i := range files {
		if n, err := cleanName(files[i].hdr.Name); err != nil || !strings.HasPrefix(n, "package/") {
			return nil, npmPackage{}, fmt.Errorf("npm tarball %s: entry %q is outside package/", tgz, files[i].hdr.Name)
		}
		files[i].hdr.Name = path.Join(dest, strings.TrimPrefix(files[i].hdr.Name, "package/"))
		if rest, ok := strings.CutPrefix(files[i].hdr.Linkname, "package/"); ok && files[i].hdr.Typeflag == tar.TypeLink {
			files[i].hdr.Linkname = path.Join(dest, rest)
		}
	}
	return files, pkg, nil
}

// relPath is target relative to the directory from, as npm writes its
// bin links.
func relPath(from, target string) (string, error) {
	up := ""
	for d := from; ; d = path.Dir(d) {
		if d == "." {
			return path.Join(up, target), nil
		}
		if rest, ok := strings.CutPrefix(target, d+"/"); ok {
			return path.Join(up, rest), nil
		}
		up = path.Join(up, "..")
	}
}

// withParents adds the directories above every entry that the entries do
// not already hold.
func withParents(files []file) []file {
	have := map[string]bool{}
	for _, f := range files {
		have[path.Clean(f.hdr.Name)] = true
	}
	out := files
	for _, f := range files {
		for _, p := range parents(path.Clean(f.hdr.Name)) {
			if !have[p.hdr.Name] {
				have[p.hdr.Name] = true
				out = append(out, p)
			}
		}
	}
	return out
}
