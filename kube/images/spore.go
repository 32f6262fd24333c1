package images

import (
	"archive/tar"
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/sporectl/sporectl/kube"
)

// The spore image's user: the pod's runAsUser and fsGroup, so the home
// claim mounted at HOME is writable.
const (
	SporeUser = "spore"
	SporeUID  = kube.SporeUID
	SporeHome = kube.HomePath
)

// SporeLinks are the names sporectl answers to through argv[0] (cmd/cli),
// links to it beside it on the PATH.
var SporeLinks = []string{"mycologist", "swarm"}

// SporeNeeds are the root filesystem's files a spore relies on: a shell
// and git for Claude Code's tools, ripgrep for its search, ssh for git
// remotes, Node.js, the CA bundle. A root filesystem without one is
// refused rather than shipped.
var SporeNeeds = []string{
	"bin/sh", "bin/bash", "usr/bin/git", "usr/bin/rg", "usr/bin/ssh", "usr/bin/node",
	strings.TrimPrefix(CACertsPath, "/"),
}

// SporeInputs are what the spore image is made of.
type SporeInputs struct {
	Sporectl string // the static binary
	// Rootfs is the Debian userland as a tar (or gzip'd tar): what
	// .ci/images.sh makes with mmdebstrap.
	Rootfs string
	// ClaudeCode and ClaudeCodeNative are the npm tarballs of
	// @anthropic-ai/claude-code and of its native package for the
	// image's architecture, both at ClaudeCodeVersion.
	ClaudeCode, ClaudeCodeNative string
	ClaudeCodeVersion            string
}

// Spore writes the spore image to out, three layers from the least to
// the most often changed: the root filesystem; Claude Code; sporectl
// with its links, the spore user and its home. It runs as the spore
// user in its home, `sporectl bridge` by default (the runtime's pod
// gives the command itself).
func (b Builder) Spore(ctx context.Context, in SporeInputs, out string) (Archive, error) {
	arch, err := staticArch(in.Sporectl)
	if err != nil {
		return Archive{}, err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return Archive{}, fmt.Errorf("make the output directory: %w", err)
	}
	sp, err := newSpool(filepath.Dir(out))
	if err != nil {
		return Archive{}, err
	}
	defer sp.Close()

	rf, err := os.Open(in.Rootfs)
	if err != nil {
		return Archive{}, fmt.Errorf("open the root filesystem: %w", err)
	}
	rootfs, err := sp.readTar(ctx, rf, in.Rootfs, asIs)
	rf.Close()
	if err != nil {
		return Archive{}, err
	}
	if err := hasAll(rootfs, SporeNeeds); err != nil {
		return Archive{}, fmt.Errorf("root filesystem %s: %w", in.Rootfs, err)
	}
	claude, err := claudeCodeFiles(ctx, sp, in.ClaudeCode, in.ClaudeCodeNative, in.ClaudeCodeVersion, arch)
	if err != nil {
		return Archive{}, err
	}
	accounts, err := withSporeUser(rootfs)
	if err != nil {
		return Archive{}, fmt.Errorf("root filesystem %s: %w", in.Rootfs, err)
	}
	bin, err := regFromPath(SporectlPath[1:], 0o755, in.Sporectl)
	if err != nil {
		return Archive{}, err
	}
	top := append([]file{bin, dir(SporeHome[1:], 0o755, SporeUID, SporeUID)}, accounts...)
	for _, l := range SporeLinks {
		top = append(top, symlink(path.Join(path.Dir(SporectlPath[1:]), l), path.Base(SporectlPath)))
	}

	return b.build(ctx, out, SporeName, arch, v1.Config{
		User:         fmt.Sprintf("%d:%d", SporeUID, SporeUID),
		Env:          []string{"PATH=" + defaultPATH, "HOME=" + SporeHome},
		Entrypoint:   []string{SporectlPath},
		Cmd:          []string{"bridge"},
		WorkingDir:   SporeHome,
		ExposedPorts: map[string]struct{}{strconv.Itoa(kube.BridgePort) + "/tcp": {}},
	}, []layerGroup{
		{files: rootfs, what: "Debian root filesystem " + filepath.Base(in.Rootfs)},
		{files: claude, what: "Claude Code " + in.ClaudeCodeVersion},
		{files: withParents(top), what: "sporectl as sporectl, " + strings.Join(SporeLinks, ", ") + "; user " + SporeUser},
	})
}

// hasAll says which names, links followed, the entries lack.
func hasAll(files []file, names []string) error {
	have := map[string]*tar.Header{}
	for _, f := range files {
		if n, err := cleanName(f.hdr.Name); err == nil && n != "" {
			h := f.hdr
			have["/"+n] = &h
		}
	}
	lookup := func(n string) (*tar.Header, bool) { h, ok := have[n]; return h, ok }
	var missing []string
	for _, n := range names {
		if _, err := resolve(lookup, n); err != nil {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s missing", strings.Join(missing, ", "))
	}
	return nil
}

// withSporeUser is the root filesystem's account files with the spore
// user and group added, as useradd would (no password: nobody logs in),
// keeping each file's owner and mode. A root filesystem that already has
// the name or the UID is refused: the pod's UID must be the spore's.
func withSporeUser(rootfs []file) ([]file, error) {
	lines := map[string]string{
		"etc/passwd":  fmt.Sprintf("%s:x:%d:%d::%s:/bin/bash", SporeUser, SporeUID, SporeUID, SporeHome),
		"etc/group":   fmt.Sprintf("%s:x:%d:", SporeUser, SporeUID),
		"etc/shadow":  SporeUser + ":!::0:99999:7:::",
		"etc/gshadow": SporeUser + ":!::",
	}
	var out []file
	for _, f := range rootfs {
		n, err := cleanName(f.hdr.Name)
		if err != nil {
			continue // refused by normalize
		}
		line, ok := lines[n]
		if !ok || f.open == nil {
			continue
		}
		delete(lines, n)
		b, err := readAll(f)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", n, err)
		}
		text := string(b)
		for _, l := range strings.Split(text, "\n") {
			fields := strings.Split(l, ":")
			if fields[0] == SporeUser || (n == "etc/passwd" || n == "etc/group") && len(fields) > 2 && fields[2] == strconv.Itoa(SporeUID) {
				return nil, fmt.Errorf("%s already has %q: the spore user must be %s with UID %d", n, l, SporeUser, SporeUID)
			}
		}
		if text != "" && !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		g := reg(n, f.hdr.Mode, f.hdr.Uid, f.hdr.Gid, []byte(text+line+"\n"))
		out = append(out, g)
	}
	for _, n := range []string{"etc/passwd", "etc/group"} {
		if _, missing := lines[n]; missing {
			return nil, fmt.Errorf("no %s to add the %s user to", n, SporeUser)
		}
	}
	return out, nil
}
