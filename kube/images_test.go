package kube_test

import (
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/kube/deploy"
)

// dockerStage is one FROM … of a Dockerfile: its name and instructions.
type dockerStage struct {
	name  string
	instr [][2]string // instruction (upper case), its arguments
}

// parseDockerfile reads the subset of Dockerfile syntax the images use:
// comments, line continuations, FROM … AS name. There is no docker here
// to build the image, so its layout is checked from the file.
func parseDockerfile(t *testing.T, name, text string) []dockerStage {
	t.Helper()
	var stages []dockerStage
	var cur strings.Builder
	flush := func() {
		line := strings.TrimSpace(cur.String())
		cur.Reset()
		if line == "" {
			return
		}
		ins, args, _ := strings.Cut(line, " ")
		ins, args = strings.ToUpper(ins), strings.TrimSpace(args)
		if ins == "FROM" {
			st := dockerStage{}
			if f := strings.Fields(args); len(f) == 3 && strings.EqualFold(f[1], "AS") {
				st.name = f[2]
			}
			stages = append(stages, st)
		}
		require.NotEmpty(t, stages, "%s: %s before FROM", name, ins)
		stages[len(stages)-1].instr = append(stages[len(stages)-1].instr, [2]string{ins, args})
	}
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		if s, ok := strings.CutSuffix(l, "\\"); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(l)
		flush()
	}
	flush()
	return stages
}

// shellCommands splits RUN arguments into simple commands (&&, ;, ||),
// without the environment assignments before each.
func shellCommands(run string) [][]string {
	var out [][]string
	for _, part := range strings.FieldsFunc(strings.NewReplacer("&&", "\x00", "||", "\x00", ";", "\x00").Replace(run), func(r rune) bool { return r == 0 }) {
		f := strings.Fields(part)
		for len(f) > 0 && strings.Contains(f[0], "=") {
			f = f[1:] // VAR=value before the command
		}
		if len(f) > 0 {
			out = append(out, f)
		}
	}
	return out
}

// sporeImage is what the last stage of a Dockerfile puts where.
type sporeImage struct {
	files   map[string]string // path in the image -> "sporectl" for the binary and links to it
	pathEnv string
	user    string
	exposed []string
}

func readImage(t *testing.T, stages []dockerStage) sporeImage {
	t.Helper()
	require.GreaterOrEqual(t, len(stages), 2, "a build stage and the image")
	final := stages[len(stages)-1]

	// The binary: built from cmd/sporectl in a named stage, copied in.
	built := map[string]string{} // stage -> binary path built there
	for _, st := range stages[:len(stages)-1] {
		for _, in := range st.instr {
			if in[0] != "RUN" {
				continue
			}
			for _, cmd := range shellCommands(in[1]) {
				if len(cmd) >= 2 && cmd[0] == "go" && cmd[1] == "build" && cmd[len(cmd)-1] == "./cmd/sporectl" {
					for i, a := range cmd {
						if a == "-o" && i+1 < len(cmd) {
							built[st.name] = cmd[i+1]
						}
					}
				}
			}
		}
	}
	require.NotEmpty(t, built, "a stage builds ./cmd/sporectl with -o")

	img := sporeImage{
		files:   map[string]string{},
		pathEnv: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", // the base image's (Debian's) default
	}
	for _, in := range final.instr {
		switch in[0] {
		case "COPY":
			f := strings.Fields(in[1])
			if len(f) == 3 && strings.HasPrefix(f[0], "--from=") {
				if bin, ok := built[strings.TrimPrefix(f[0], "--from=")]; ok && bin == f[1] {
					img.files[f[2]] = "sporectl"
				}
			}
		case "RUN":
			for _, cmd := range shellCommands(in[1]) {
				if len(cmd) == 4 && cmd[0] == "ln" && (cmd[1] == "-s" || cmd[1] == "-sf") {
					target, link := cmd[2], cmd[3]
					if !path.IsAbs(target) {
						target = path.Join(path.Dir(link), target)
					}
					if img.files[target] == "sporectl" {
						img.files[link] = "sporectl"
					}
				}
			}
		case "ENV":
			if v, ok := strings.CutPrefix(in[1], "PATH="); ok {
				img.pathEnv = v
			}
		case "USER":
			img.user = in[1]
		case "EXPOSE":
			img.exposed = append(img.exposed, strings.Fields(in[1])...)
		}
	}
	return img
}

// onPath: name, looked up on the image's PATH, is sporectl.
func (img sporeImage) onPath(name string) bool {
	for _, dir := range strings.Split(img.pathEnv, ":") {
		if img.files[path.Join(dir, name)] == "sporectl" {
			return true
		}
	}
	return false
}

func sporeDockerfile(t *testing.T) string {
	t.Helper()
	b, err := deploy.Files.ReadFile("images/spore.Dockerfile")
	require.NoError(t, err)
	return string(b)
}

// The spore image has sporectl on the PATH (the runtime's pod command is
// "sporectl bridge") and `mycologist` and `swarm` as links to it, the
// names sporectl answers to through argv[0] (cmd/cli programArgs); it
// runs as the pod's UID and exposes the bridge port.
func TestSporeImagePutsMycologistAndSwarmOnPath(t *testing.T) {
	img := readImage(t, parseDockerfile(t, "spore.Dockerfile", sporeDockerfile(t)))
	rt, err := kube.New(&rest.Config{Host: "https://unused"}, kube.Options{Namespace: "sporectl"})
	require.NoError(t, err)
	pod, err := rt.PodSpecForTest(spore("image"))
	require.NoError(t, err)
	assert.True(t, img.onPath(pod.Spec.Containers[0].Command[0]), "the pod's command %q is the sporectl binary on the image's PATH (%v)", pod.Spec.Containers[0].Command[0], img.files)
	for _, name := range []string{"mycologist", "swarm"} {
		assert.True(t, img.onPath(name), "%s is a link to sporectl on the image's PATH (%v)", name, img.files)
	}
	assert.Equal(t, "1000:1000", img.user, "the image runs as the pod's runAsUser")
	assert.Equal(t, int64(kube.SporeUID), *pod.Spec.SecurityContext.RunAsUser)
	assert.Equal(t, []string{"8080"}, img.exposed)
	assert.Equal(t, int32(kube.BridgePort), pod.Spec.Containers[0].Ports[0].ContainerPort)
}

// The check is not fooled: the spore Dockerfile with a link dropped, a
// link to something else, the binary copied off the PATH, or a PATH that
// leaves out the links' directory fails it.
func TestSporeImageCheckNoticesWhatIsMissing(t *testing.T) {
	real := sporeDockerfile(t)
	const links = "RUN ln -s sporectl /usr/local/bin/mycologist && ln -s sporectl /usr/local/bin/swarm"
	require.Contains(t, real, links)
	for _, tc := range []struct {
		name, from, to string
		missing        string
	}{
		{"no swarm link", links, "RUN ln -s sporectl /usr/local/bin/mycologist", "swarm"},
		{"a link to another binary", links, "RUN ln -s claude /usr/local/bin/mycologist && ln -s sporectl /usr/local/bin/swarm", "mycologist"},
		{"binary off the PATH", "/usr/local/bin/sporectl\n", "/opt/sporectl\n", "sporectl"},
		{"PATH without /usr/local/bin", "USER 1000:1000", "ENV PATH=/usr/bin:/bin\nUSER 1000:1000", "mycologist"},
	} {
		text := strings.Replace(real, tc.from, tc.to, 1)
		require.NotEqual(t, real, text, tc.name)
		img := readImage(t, parseDockerfile(t, tc.name, text))
		assert.False(t, img.onPath(tc.missing), "%s: %s must not be found", tc.name, tc.missing)
	}
	assert.Equal(t, [][]string{{"apt-get", "update"}, {"ln", "-s", "a", "b"}, {"echo", "ok"}}, shellCommands("apt-get update && ln -s a b; X=1 echo ok"))
}
