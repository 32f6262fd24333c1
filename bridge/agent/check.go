package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
)

// CheckBin says why bin cannot be run as an agent, nil when it can: a
// bare name must be on $PATH (exec's own lookup, so the agent is found
// the way it will be started), a path must be a regular file with an
// execute bit. It costs a stat (a PATH walk for a bare name), no more:
// running `claude --version` would catch a binary that runs but fails,
// at 40 ms warm and 330 ms cold for Claude Code 2.1.328 on every wake,
// and would hang on an agent that ignores its arguments; such an agent is
// caught at its first turn instead (the bridge's agent_error).
//
// The error starts with name ("claude: not found at /opt/claude") and
// names the path it looked at, never anything of the environment's but
// that.
func CheckBin(name, bin string) error {
	if !strings.Contains(bin, "/") {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	}
	fi, err := os.Stat(bin)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: not found at %s", name, bin)
	case err != nil:
		return fmt.Errorf("%s: %w", name, err)
	case fi.IsDir():
		return fmt.Errorf("%s: %s is a directory, not an executable", name, bin)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s: %s is not a regular file", name, bin)
	case fi.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("%s: %s is not executable (mode %04o)", name, bin, fi.Mode().Perm())
	}
	return nil
}

// Check is CheckBin of c's executable.
func (c *Claude) Check() error { return CheckBin(KindClaude, c.Bin) }
