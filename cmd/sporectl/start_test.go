package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/internal/testutil/golint"
)

// maxOwnInitBytes bounds what sporectl's own packages allocate in their
// init. Their costly values are built on first use (package lazy); what is
// left is small tables and error values, 54 KiB, most of it the PostgreSQL
// store's migrations read from the embedded files (33 KiB). Before that,
// the page's templates and markdown and the regexps alone were about 480 KiB.
const maxOwnInitBytes = 56 << 10

// maxAllInitBytes bounds what every linked package allocates at init: the
// third-party packages' share is the larger one and is paid by every
// command (docs/performance.md, "Process start, again"). It was 2.9 MB
// with client-go's clientset and 1.59 MB with goldmark's extension
// package; linking either again, or another package as costly, fails.
const maxAllInitBytes = 1450 << 10

// ownPrefix is the import path of sporectl's own packages.
const ownPrefix = "github.com/sporectl/sporectl/"

// initCost is one package's line of GODEBUG=inittrace=1.
type initCost struct {
	pkg           string
	bytes, allocs int64
}

// TestStartInitCost runs the binary with GODEBUG=inittrace=1 and bounds
// what sporectl's own packages, and all linked packages, allocate at init
// for `version` and `--help`, in bytes (deterministic, unlike time).
func TestStartInitCost(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--help"}} {
		t.Run(args[0], func(t *testing.T) {
			cmd := exec.Command(binPath, args...)
			cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Run(), "sporectl %v: %s", args, stderr.String())
			costs := parseInitTrace(t, stderr.Bytes())
			require.NotEmpty(t, costs, "inittrace printed nothing: %s", stderr.String())

			var own, all int64
			var seenOwn bool
			for _, c := range costs {
				all += c.bytes
				if strings.HasPrefix(c.pkg, ownPrefix) {
					seenOwn = true
					own += c.bytes
					t.Logf("%-50s %7d B %5d allocs", c.pkg, c.bytes, c.allocs)
				}
			}
			require.True(t, seenOwn, "no init line of sporectl's own packages: is inittrace's format still \"init PKG @… ms, … ms clock, N bytes, M allocs\"?")
			t.Logf("init allocations: sporectl's packages %d B, all packages %d B", own, all)
			require.LessOrEqual(t, own, int64(maxOwnInitBytes), "sporectl's packages allocate %d B at init: build costly values on first use (package lazy)", own)
			if all > maxAllInitBytes {
				largest := slices.Clone(costs)
				slices.SortFunc(largest, func(a, b initCost) int { return int(b.bytes - a.bytes) })
				for _, c := range largest[:min(len(largest), 10)] {
					t.Logf("largest: %-50s %7d B %5d allocs", c.pkg, c.bytes, c.allocs)
				}
			}
			require.LessOrEqual(t, all, int64(maxAllInitBytes), "the linked packages allocate %d B at init: which new import costs it (go mod why)?", all)
		})
	}
}

// unlinked are the packages (and those under them) the binary must not
// link: client-go's typed clientset and its scheme register every API
// group of k8s.io/api at init, and its generated machinery (gentype,
// applyconfigurations) brings client-go's testing fakes, discovery and the
// OpenAPI packages with it. The kube runtime has a core/v1 client of its
// own (kube/core.go); tests may link these, the binary must not.
// goldmark's extension package compiles its autolink and typographer
// regexps at init (264 KiB); the page's tables and strikethrough are
// mycelia/ui/gfm's.
var unlinked = []string{
	"github.com/yuin/goldmark/extension",
	"k8s.io/client-go/kubernetes",
	"k8s.io/client-go/gentype",
	"k8s.io/client-go/testing",
	"k8s.io/client-go/applyconfigurations",
	"k8s.io/client-go/discovery",
	"k8s.io/client-go/openapi",
}

// TestStartLinksNoClientset lists the binary's packages (`go list -deps`,
// test files excluded) and names each one of unlinked it finds.
func TestStartLinksNoClientset(t *testing.T) {
	deps := golint.Deps(t, "cmd/sporectl")
	require.Contains(t, deps, "k8s.io/client-go/rest", "go list -deps answered without the packages the kube runtime links: %q", deps)
	var found []string
	for _, d := range deps {
		for _, u := range unlinked {
			if d == u || strings.HasPrefix(d, u+"/") {
				found = append(found, d)
			}
		}
	}
	require.Empty(t, found, "the binary links %d packages it must not (go mod why PKG says what imports one)", len(found))
}

// parseInitTrace reads inittrace's lines: "init PKG @T ms, C ms clock, B
// bytes, A allocs".
func parseInitTrace(t *testing.T, out []byte) []initCost {
	t.Helper()
	var costs []initCost
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 11 || f[0] != "init" || f[8] != "bytes," || f[10] != "allocs" {
			continue
		}
		b, err := strconv.ParseInt(f[7], 10, 64)
		require.NoError(t, err, "inittrace line %q", sc.Text())
		a, err := strconv.ParseInt(f[9], 10, 64)
		require.NoError(t, err, "inittrace line %q", sc.Text())
		costs = append(costs, initCost{pkg: f[1], bytes: b, allocs: a})
	}
	return costs
}

// BenchmarkProcessStart runs `sporectl version` and a hello-world Go
// binary built here, one after the other, b.N times each, and reports the
// median wall time of each, their ratio (the target: at most 2),
// and the median of each process's peak RSS.
//
// Each process is started by a small Go launcher built here, which times
// it and reads its rusage: Linux counts in a process's peak RSS the memory
// of whoever exec'd it (Go starts children with vfork), so started from
// this test binary both would report the test binary's ~48 MiB. The
// launcher's own few MiB are still a floor under hello's figure.
func BenchmarkProcessStart(b *testing.B) {
	dir := b.TempDir()
	hello := buildGo(b, dir, "hello", helloSource)
	launch := buildGo(b, dir, "launch", launchSource)
	var spTimes, hwTimes []float64
	var spRSS, hwRSS []float64
	for b.Loop() {
		d, rss := runOnce(b, launch, binPath, "version")
		spTimes, spRSS = append(spTimes, d), append(spRSS, rss)
		d, rss = runOnce(b, launch, hello)
		hwTimes, hwRSS = append(hwTimes, d), append(hwRSS, rss)
	}
	sp, hw := median(spTimes), median(hwTimes)
	b.ReportMetric(0, "ns/op") // two launches and two processes per op: the medians say more
	b.ReportMetric(sp, "sporectl-ms")
	b.ReportMetric(hw, "hello-ms")
	b.ReportMetric(sp/hw, "ratio")
	b.ReportMetric(median(spRSS), "sporectl-maxrss-MiB")
	b.ReportMetric(median(hwRSS), "hello-maxrss-MiB")
}

const helloSource = `package main

import "fmt"

func main() { fmt.Println("hello") }
`

// launchSource runs its arguments as a command, its output discarded, and
// prints the command's wall time in nanoseconds and its peak RSS in KiB.
const launchSource = `package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

func main() {
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	start := time.Now()
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	d := time.Since(start)
	fmt.Println(d.Nanoseconds(), cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss)
}
`

// runOnce launches one process and returns its wall time in milliseconds
// and its peak RSS in MiB.
func runOnce(b *testing.B, launch string, args ...string) (ms, rssMiB float64) {
	b.Helper()
	out, err := exec.Command(launch, args...).Output()
	if err != nil {
		b.Fatalf("launch %v: %v", args, err)
	}
	var ns, kib int64
	if _, err := fmt.Sscan(string(out), &ns, &kib); err != nil {
		b.Fatalf("launch %v: read %q: %v", args, out, err)
	}
	return float64(ns) / 1e6, float64(kib) / 1024 // Linux: Maxrss is in KiB
}

// buildGo builds the one-file program src as dir/name.
func buildGo(b *testing.B, dir, name, src string) string {
	b.Helper()
	mod := filepath.Join(dir, name+"-src")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		b.Fatal(err)
	}
	files := map[string]string{"go.mod": "module " + name + "\n\ngo 1.26\n", "main.go": src}
	for f, text := range files {
		if err := os.WriteFile(filepath.Join(mod, f), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build %s: %v\n%s", name, err, msg)
	}
	return out
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
