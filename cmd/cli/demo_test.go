package cli

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDemoStepLines: the demo (.ci/demo.sh, make demo) prints each step's
// command line quoted as a shell needs it, so that running the printed
// line passes the same arguments.
func TestDemoStepLines(t *testing.T) {
	bash, err := exec.LookPath("bash")
	require.NoError(t, err, "the demo needs bash")
	lib, err := filepath.Abs(filepath.Join("..", "..", ".ci", "demo-steps.sh"))
	require.NoError(t, err)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"wake", "worker-1", "--wait", "20s"}, "wake worker-1 --wait 20s"},
		{[]string{"prompt", "worker-1", "hello, worker-1"}, "prompt worker-1 'hello, worker-1'"},
		{[]string{"prompt", "w", "are you back?"}, "prompt w 'are you back?'"},
		{[]string{"prompt", "w", "it's $HOME; `x` *"}, `prompt w 'it'\''s $HOME; ` + "`x`" + ` *'`},
		{[]string{"prompt", "w", ""}, "prompt w ''"},
		{[]string{"prompt", "w", "two\nlines"}, "prompt w 'two\nlines'"},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			// $bin is a stand-in sporectl that prints its arguments, one a
			// line, so the run half of step is checked too.
			script := `source "$1"; shift; printargs() { printf '<%s>\n' "$@"; }; bin=printargs; step "$@"`
			out, err := exec.Command(bash, append([]string{"-c", script, "bash", lib}, c.args...)...).Output()
			require.NoError(t, err)
			line, ran, ok := strings.Cut(strings.TrimPrefix(string(out), "\n"), "\n<")
			require.True(t, ok, "output %q", out)
			require.Equal(t, "$ sporectl "+c.want, line)
			require.Equal(t, argLines(c.args), "<"+ran)

			// The printed line, run by a shell, gives back the arguments.
			back, err := exec.Command(bash, "-c", `sporectl() { printf '<%s>\n' "$@"; }; `+strings.TrimPrefix(line, "$ ")).Output()
			require.NoError(t, err)
			require.Equal(t, argLines(c.args), string(back))
		})
	}
}

func argLines(args []string) string {
	var b strings.Builder
	for _, a := range args {
		b.WriteString("<" + a + ">\n")
	}
	return b.String()
}
