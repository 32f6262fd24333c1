package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/internal/lazy"
)

// envStartChild makes this test binary, run again by TestStartBuildsNothing,
// run one command line (its value, fields split on spaces) in a fresh
// process and print what that built.
const envStartChild = "SPORECTL_TEST_START_CHILD"

// TestStartBuildsNothing: `version`, `--help` and `completion` build none
// of the values kept for first use (the page's templates and markdown, the
// regexps, the quantity bounds: package lazy), so they pay only for what
// the linked packages' own init does (docs/performance.md, "Process
// start"). Each command runs in a process of its own, since a value, once
// built, stays built for the process. A command that checks an image
// builds the image grammar: the record is of what ran, not always empty.
func TestStartBuildsNothing(t *testing.T) {
	if args := os.Getenv(envStartChild); args != "" {
		startChild(args)
		return
	}
	for _, tc := range []struct {
		args string
		want []string
	}{
		{"version", []string{}},
		{"--help", []string{}},
		{"help create", []string{}},
		{"completion bash", []string{}},
		{"create s1 --image Not!An@Image", []string{"state.imageRE"}},
	} {
		t.Run(tc.args, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestStartBuildsNothing$")
			cmd.Env = append(os.Environ(), envStartChild+"="+tc.args, EnvStore+"="+t.TempDir())
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			require.NoError(t, err, "child: %s", stderr.String())
			_, line, ok := strings.Cut(string(out), builtMark)
			require.True(t, ok, "the child says what it built: %s", out)
			line, _, _ = strings.Cut(line, "\n")
			var built []string
			require.NoError(t, json.Unmarshal([]byte(line), &built), "child's line: %q", line)
			require.Equal(t, tc.want, built, "built by sporectl %s", tc.args)
		})
	}
}

// builtMark starts the child's line that lists what it built (the test
// binary prints its own lines too).
const builtMark = "lazy built: "

// startChild runs args and prints the JSON list of the values built.
func startChild(args string) {
	var out, errb bytes.Buffer
	Run(context.Background(), strings.Fields(args), IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb})
	b, _ := json.Marshal(lazy.Built())
	os.Stdout.WriteString(builtMark + string(b) + "\n")
}
