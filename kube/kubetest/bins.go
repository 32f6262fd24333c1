package kubetest

import (
	"fmt"
	"os"
	"path/filepath"
)

// EnvBinDir names the directory holding etcd, kube-apiserver and kubectl.
const EnvBinDir = "SPORECTL_KUBE_BIN_DIR"

// Binary returns the path of one of the tool binaries, or an error that
// says how to build them.
func Binary(name string) (string, error) {
	dir := os.Getenv(EnvBinDir)
	if dir == "" {
		return "", fmt.Errorf("%s is not set; run: export %s=\"$(.ci/kube-tools.sh)\"", EnvBinDir, EnvBinDir)
	}
	p := filepath.Join(dir, name)
	st, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("%s: %w (build it with .ci/kube-tools.sh)", p, err)
	}
	if st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s is not executable", p)
	}
	return p, nil
}

// inCI reports whether a missing dependency must fail instead of skip.
func inCI() bool { return os.Getenv("CI") != "" }
