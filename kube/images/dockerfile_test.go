package images_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/internal/testutil/golint"
	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/kube/deploy"
	"github.com/sporectl/sporectl/kube/images"
)

// dockerImage is what the last stage of one of kube/deploy/images'
// Dockerfiles says the image is, in the terms an image config and its
// files use.
type dockerImage struct {
	user, home, workdir string
	entrypoint, cmd     []string
	exposed             []string
	sporectl            string            // where the binary is copied
	links               map[string]string // ln -s: link -> target, resolved
	useradd             [2]string         // uid, home
	claudeVersion       string            // ARG CLAUDE_CODE_VERSION
	npmGlobal           []string          // npm install -g packages
	aptPackages         []string
}

// instructions splits a Dockerfile into (instruction, arguments) of its
// last stage, joining continued lines and dropping comments.
func instructions(text string) [][2]string {
	var out [][2]string
	var cur strings.Builder
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		if s, ok := strings.CutSuffix(l, "\\"); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(l)
		line := strings.TrimSpace(cur.String())
		cur.Reset()
		if line == "" {
			continue
		}
		ins, args, _ := strings.Cut(line, " ")
		ins = strings.ToUpper(ins)
		if ins == "FROM" {
			out = nil // only the last stage is the image
		}
		out = append(out, [2]string{ins, strings.TrimSpace(args)})
	}
	return out
}

func parseDockerImage(t *testing.T, text string) dockerImage {
	t.Helper()
	img := dockerImage{links: map[string]string{}}
	for _, in := range instructions(text) {
		args := in[1]
		switch in[0] {
		case "USER":
			img.user = args
		case "WORKDIR":
			img.workdir = args
		case "ENV":
			if v, ok := strings.CutPrefix(args, "HOME="); ok {
				img.home = v
			}
		case "ENTRYPOINT":
			require.NoError(t, json.Unmarshal([]byte(args), &img.entrypoint), args)
		case "CMD":
			require.NoError(t, json.Unmarshal([]byte(args), &img.cmd), args)
		case "EXPOSE":
			img.exposed = append(img.exposed, strings.Fields(args)...)
		case "ARG":
			if v, ok := strings.CutPrefix(args, "CLAUDE_CODE_VERSION="); ok {
				img.claudeVersion = v
			}
		case "COPY":
			if f := strings.Fields(args); len(f) == 3 && f[0] == "--from=build" && path.Base(f[1]) == "sporectl" {
				img.sporectl = f[2]
			}
		case "RUN":
			for _, part := range regexp.MustCompile(`&&|;|\|\|`).Split(args, -1) {
				f := strings.Fields(part)
				switch {
				case len(f) == 4 && f[0] == "ln" && f[1] == "-s":
					target := f[2]
					if !path.IsAbs(target) {
						target = path.Join(path.Dir(f[3]), target)
					}
					img.links[f[3]] = target
				case len(f) > 0 && f[0] == "useradd":
					for i := 1; i+1 < len(f); i++ {
						switch f[i] {
						case "--uid":
							img.useradd[0] = f[i+1]
						case "--home-dir":
							img.useradd[1] = f[i+1]
						}
					}
				case len(f) > 3 && f[0] == "npm" && f[1] == "install" && f[2] == "-g":
					for _, p := range f[3:] {
						p = strings.Trim(p, `"`)
						if i := strings.LastIndex(p, "@"); i > 0 {
							p = p[:i]
						}
						img.npmGlobal = append(img.npmGlobal, p)
					}
				case len(f) > 2 && f[0] == "apt-get" && f[1] == "install":
					for _, p := range f[2:] {
						if !strings.HasPrefix(p, "-") {
							img.aptPackages = append(img.aptPackages, p)
						}
					}
				}
			}
		}
	}
	return img
}

// differences are where the built image is not what the Dockerfile says.
func differences(d dockerImage, img images.Image) []string {
	var diffs []string
	differ := func(what string, docker, built any) {
		diffs = append(diffs, fmt.Sprintf("%s: Dockerfile %v, built %v", what, docker, built))
	}
	cf := img.Config.Config
	if d.user != cf.User {
		differ("user", d.user, cf.User)
	}
	env := map[string]string{}
	for _, e := range cf.Env {
		k, v, _ := strings.Cut(e, "=")
		env[k] = v
	}
	if d.home != env["HOME"] {
		differ("HOME", d.home, env["HOME"])
	}
	if w := cmp(d.workdir, "/"); w != cmp(cf.WorkingDir, "/") {
		differ("working directory", d.workdir, cf.WorkingDir)
	}
	if !slices.Equal(d.entrypoint, cf.Entrypoint) {
		differ("entrypoint", d.entrypoint, cf.Entrypoint)
	}
	if !slices.Equal(d.cmd, cf.Cmd) {
		differ("cmd", d.cmd, cf.Cmd)
	}
	var exposed []string
	for p := range cf.ExposedPorts {
		exposed = append(exposed, strings.TrimSuffix(p, "/tcp"))
	}
	slices.Sort(exposed)
	if !slices.Equal(d.exposed, exposed) {
		differ("exposed ports", d.exposed, exposed)
	}
	if h, err := img.Content(d.sporectl); err != nil || h.Mode&0o111 == 0 {
		differ("the sporectl binary", d.sporectl, err)
	}
	for link, target := range d.links {
		if got, _, err := img.Resolve(link); err != nil || got != target {
			differ("link "+link, target, got)
		}
	}
	if d.useradd != [2]string{} {
		passwd, _ := img.File("/etc/passwd")
		want := fmt.Sprintf(":x:%s:%s::%s:", d.useradd[0], d.useradd[0], d.useradd[1])
		if !strings.Contains(string(passwd), want) {
			differ("the user (useradd)", d.useradd, string(passwd))
		}
	}
	for _, p := range d.npmGlobal {
		// npm -g in the node image: prefix /usr/local, bin links beside sporectl.
		if _, _, err := img.Resolve("/usr/local/lib/node_modules/" + p); err != nil {
			differ("npm package", p, err)
		}
	}
	if len(d.npmGlobal) > 0 {
		if _, err := img.Content("/usr/local/bin/claude"); err != nil {
			differ("claude on the PATH", "/usr/local/bin/claude", err)
		}
	}
	return diffs
}

func cmp(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func dockerfile(t *testing.T, name string) string {
	t.Helper()
	b, err := deploy.Files.ReadFile("images/" + name)
	require.NoError(t, err)
	return string(b)
}

// repoFile is a file of the repository, from this package's directory.
func repoFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", name))
	require.NoError(t, err)
	return string(b)
}

func builtSpore(t *testing.T) images.Image {
	t.Helper()
	f := newFixture(t, time.Unix(0, 0), nil)
	a, err := images.Builder{}.Spore(context.Background(), f.in, filepath.Join(f.dir, "out", "spore.tar"))
	require.NoError(t, err)
	return readBack(t, a)
}

func builtSporectl(t *testing.T) images.Image {
	t.Helper()
	a, err := images.Builder{}.Sporectl(context.Background(), images.SporectlInputs{Sporectl: staticSporectl(t), CACerts: caCerts(t)}, filepath.Join(t.TempDir(), "sporectl.tar"))
	require.NoError(t, err)
	return readBack(t, a)
}

// Both ways of making the images — the Dockerfiles, for people with
// Docker, and `make images` — describe the same images: user, HOME,
// working directory, entrypoint and cmd, exposed port, where sporectl and
// its links are, the spore user's UID and home, Claude Code's place and
// pinned version (.ci/claude-code.sh), and the Debian packages the
// Dockerfile installs among those .ci/images.sh puts in the root
// filesystem.
func TestDockerfilesDescribeTheBuiltImages(t *testing.T) {
	spore := parseDockerImage(t, dockerfile(t, "spore.Dockerfile"))
	require.NotEmpty(t, spore.links, "the parser found the links")
	require.NotEmpty(t, spore.npmGlobal)
	assert.Empty(t, differences(spore, builtSpore(t)))

	pin := regexp.MustCompile(`(?m)^version=(\S+)$`).FindStringSubmatch(repoFile(t, ".ci/claude-code.sh"))
	require.Len(t, pin, 2)
	assert.Equal(t, pin[1], spore.claudeVersion, "the Dockerfile's Claude Code is the version the tests pin")
	assert.Contains(t, repoFile(t, ".ci/images.sh"), `version="$(sed -n 's/^version=//p' .ci/claude-code.sh)"`, "images.sh takes the same pin")

	pkgs := regexp.MustCompile(`(?m)^packages=\(([^)]*)\)$`).FindStringSubmatch(repoFile(t, ".ci/images.sh"))
	require.Len(t, pkgs, 2)
	debian := strings.Fields(pkgs[1])
	for _, p := range spore.aptPackages {
		assert.Contains(t, debian, p, "the Dockerfile installs %s; the root filesystem must have it too", p)
	}
	assert.Contains(t, debian, "nodejs", "the Dockerfile's base image is Node.js's")

	sporectl := parseDockerImage(t, dockerfile(t, "sporectl.Dockerfile"))
	built := builtSporectl(t)
	assert.Empty(t, differences(sporectl, built))
	// distroless/static's nonroot image, the Dockerfile's base, holds the
	// CA bundle at Debian's path; the built image must hold it there too.
	_, err := built.Content(images.CACertsPath)
	assert.NoError(t, err)
}

// The comparison is not fooled: a Dockerfile that says something else
// about the image than the builder makes is found out.
func TestDockerfileComparisonNoticesADifference(t *testing.T) {
	img := builtSpore(t)
	real := dockerfile(t, "spore.Dockerfile")
	for _, tc := range []struct{ name, from, to, want string }{
		{"another user", "USER 1000:1000", "USER 1001:1001", "user"},
		{"another HOME", "ENV HOME=/home/spore", "ENV HOME=/root", "HOME"},
		{"another entrypoint", `ENTRYPOINT ["/usr/local/bin/sporectl"]`, `ENTRYPOINT ["/bin/sporectl"]`, "entrypoint"},
		{"another cmd", `CMD ["bridge"]`, `CMD ["serve"]`, "cmd"},
		{"another port", "EXPOSE 8080", "EXPOSE 9090", "exposed ports"},
		{"binary elsewhere", "/out/sporectl /usr/local/bin/sporectl", "/out/sporectl /opt/sporectl", "the sporectl binary"},
		{"a link the image lacks", "ln -s sporectl /usr/local/bin/swarm", "ln -s sporectl /usr/local/bin/hive", "link /usr/local/bin/hive"},
		{"another uid", "--uid 1000", "--uid 1500", "useradd"},
		{"another npm package", `"@anthropic-ai/claude-code@`, `"@anthropic-ai/other@`, "npm package"},
	} {
		text := strings.Replace(real, tc.from, tc.to, 1)
		require.NotEqual(t, real, text, tc.name)
		diffs := differences(parseDockerImage(t, text), img)
		require.NotEmpty(t, diffs, tc.name)
		assert.Contains(t, strings.Join(diffs, "\n"), tc.want, tc.name)
	}
}

// The images' names are those the runtime and kube/deploy use: the spore
// image is the default `init --image` leaves, the sporectl image the one
// kustomization.yaml gives serve and reconcile.
func TestImageNamesAreTheDeployedOnes(t *testing.T) {
	assert.Equal(t, kube.DefaultImage, images.SporeName)
	b, err := deploy.Files.ReadFile("kustomization.yaml")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^images:\n  - name: sporectl\n    newName: (\S+)\n    newTag: (\S+)$`).FindStringSubmatch(string(b))
	require.Len(t, m, 3, "kustomization.yaml renames the sporectl image:\n%s", b)
	assert.Equal(t, m[1]+":"+m[2], images.SporectlName)
	for _, name := range []string{"serve.yaml", "reconcile.yaml"} {
		m, err := deploy.Files.ReadFile(name)
		require.NoError(t, err)
		assert.Contains(t, string(m), "image: sporectl\n", "%s runs the image the kustomization renames", name)
		assert.Contains(t, string(m), fmt.Sprintf("runAsUser: %d\n", images.SporectlUID), "%s runs as the sporectl image's user", name)
	}
}

// The builder stays out of the product: the sporectl binary links neither
// this package nor go-containerregistry.
func TestSporectlDoesNotLinkTheBuilder(t *testing.T) {
	deps := golint.Deps(t, "cmd/sporectl")
	require.Contains(t, deps, golint.Module+"/kube", "the list is the binary's dependencies")
	for _, l := range deps {
		assert.NotContains(t, l, "go-containerregistry")
		assert.NotEqual(t, "github.com/sporectl/sporectl/kube/images", l)
	}
}
