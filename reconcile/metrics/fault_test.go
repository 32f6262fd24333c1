package metrics_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/metrics"
	"github.com/sporectl/sporectl/reconcile/metrics/metricstest"
	"github.com/sporectl/sporectl/state"
)

// writerEnv makes a re-executed copy of this test binary a process that
// writes a textfile at the path it names, again and again, until killed.
const writerEnv = "SPORECTL_METRICS_TEST_WRITER"

func TestMain(m *testing.M) {
	if path := os.Getenv(writerEnv); path != "" {
		os.Exit(writeForever(path))
	}
	os.Exit(m.Run())
}

// writeForever writes textfiles of a hundred colonies (some kB, so a
// kill lands inside a write as often as between two) until killed.
func writeForever(path string) int {
	var plans []*reconcile.SporePlan
	for i := range 100 {
		plans = append(plans, &reconcile.SporePlan{Spore: state.Spore{Wish: state.Wish{ID: fmt.Sprintf("s%d", i), Colony: fmt.Sprintf("c%02d", i)}}})
	}
	out := &reconcile.Outcome{Plans: plans}
	for i := 0; ; i++ {
		if err := metrics.WriteFile(path, metrics.Textfile(out, time.Duration(i)*time.Millisecond, t0)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
}

// TestWriteFileKilled: a run SIGKILLed while it writes its textfile
// leaves the previous file whole (parsed entirely, every colony in it);
// what else it may leave is a temporary file whose name starts with a dot
// and does not end in .prom, which node_exporter does not read, and the
// next run writes the file whole again.
func TestWriteFileKilled(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sporectl.prom")
	for round := range 8 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), writerEnv+"="+path)
		var errb strings.Builder
		cmd.Stderr = &errb
		require.NoError(t, cmd.Start())
		// Until it has written once, then a little more: a kill at some
		// point of some write.
		deadline := time.Now().Add(10 * time.Second)
		for {
			if _, err := os.Stat(path); err == nil || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(time.Duration(round*3) * time.Millisecond)
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		_ = cmd.Wait()
		require.Empty(t, errb.String())

		b, err := os.ReadFile(path)
		require.NoError(t, err, "round %d", round)
		fams := metricstest.Parse(t, string(b))
		require.Equal(t, 100, fams.Series("sporectl_reconcile_delivered_messages"), "round %d: the whole file", round)
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		for _, e := range entries {
			if e.Name() != "sporectl.prom" {
				require.True(t, strings.HasPrefix(e.Name(), ".") && !strings.HasSuffix(e.Name(), ".prom"), "left %s", e.Name())
			}
		}
	}
}
