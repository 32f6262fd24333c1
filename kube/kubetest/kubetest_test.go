package kubetest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"

	"github.com/sporectl/sporectl/kube/kubetest"
)

// Start gives a working admin config; Stop leaves no process and no files.
func TestStartAndStopLeaveNothingBehind(t *testing.T) {
	s := kubetest.New(t)
	cs, err := kubernetes.NewForConfig(s.Config)
	require.NoError(t, err)
	v, err := cs.Discovery().ServerVersion()
	require.NoError(t, err)
	assert.Equal(t, "v1.37.2", v.GitVersion)

	pids := s.PIDs()
	require.Len(t, pids, 2, "etcd and kube-apiserver")
	dir := filepath.Dir(s.Kubeconfig)
	s.Stop()
	for _, pid := range pids {
		err := syscall.Kill(pid, 0)
		assert.ErrorIs(t, err, syscall.ESRCH, "process %d is gone", pid)
	}
	_, err = os.Stat(dir)
	assert.True(t, os.IsNotExist(err), "temp dir removed")
}

// With CI set, missing binaries fail the test instead of skipping it.
func TestMissingBinariesFailInCI(t *testing.T) {
	if os.Getenv("KUBETEST_CHILD") == "1" {
		kubetest.Shared(t)
		return
	}
	run := func(ci string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissingBinariesFailInCI$", "-test.v")
		cmd.Env = append(os.Environ(), "KUBETEST_CHILD=1", "CI="+ci, kubetest.EnvBinDir+"="+t.TempDir())
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("true")
	require.Error(t, err, "must fail in CI:\n%s", out)
	assert.Contains(t, out, "--- FAIL")
	out, err = run("")
	require.NoError(t, err, "must skip outside CI:\n%s", out)
	assert.True(t, strings.Contains(out, "--- SKIP"), out)
}
