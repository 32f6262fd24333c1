package dirstore

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/storetest"
)

// The crash harness runs writers as separate processes (this test binary
// re-executed) and kills them with SIGKILL, at random moments or at a named
// step of a commit. A writer prints "ack <text>" only after Update returned
// nil; afterwards every acknowledged event must be in the store exactly
// once, nothing unacknowledged more than once, and Check must be clean.

const (
	envHelper    = "SPORECTL_DIRSTORE_HELPER"
	envStore     = "SPORECTL_DIRSTORE_PATH"
	envTag       = "SPORECTL_DIRSTORE_TAG"
	envCount     = "SPORECTL_DIRSTORE_COUNT"
	envFailpoint = "SPORECTL_DIRSTORE_FAILPOINT"
	envCompact   = "SPORECTL_DIRSTORE_COMPACT"
	envChurn     = "SPORECTL_DIRSTORE_CHURN"
)

var crashSpores = []string{"alpha", "beta", "gamma"}

// TestHelperProcess is the writer; it does nothing unless re-executed by
// the harness.
func TestHelperProcess(t *testing.T) {
	if os.Getenv(envHelper) != "writer" {
		return
	}
	os.Exit(runWriter())
}

func runWriter() int {
	if fp := os.Getenv(envFailpoint); fp != "" {
		name, nth, _ := strings.Cut(fp, ":")
		n, _ := strconv.Atoi(nth)
		hits := 0
		failpoint = func(at string) {
			if at == name {
				hits++
				if hits >= n {
					_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
					select {} // the signal arrives
				}
			}
		}
	}
	compact, _ := strconv.ParseInt(os.Getenv(envCompact), 10, 64)
	ctx := context.Background()
	s, err := Open(ctx, os.Getenv(envStore), Options{CompactBytes: compact})
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 1
	}
	tag := os.Getenv(envTag)
	count, _ := strconv.Atoi(os.Getenv(envCount))
	out := bufio.NewWriter(os.Stdout)
	// The store is open: a kill timed from here lands among commits
	// however long this process took to start.
	fmt.Fprintln(out, "ready")
	out.Flush()
	r := rand.New(rand.NewPCG(uint64(os.Getpid()), 1))
	for i := 0; count == 0 || i < count; i++ {
		id := crashSpores[r.IntN(len(crashSpores))]
		batch := 1 + r.IntN(20)
		texts := make([]string, batch)
		for j := range texts {
			texts[j] = fmt.Sprintf("%s-%d-%d", tag, i, j)
		}
		msg := fmt.Sprintf("%s-m%d", tag, i)
		if os.Getenv(envChurn) != "" {
			// Spores come and go: each has a log that its delete removes.
			err := s.Update(ctx, func(tx state.Tx) error {
				id := fmt.Sprintf("churn-%s-%d", tag, i)
				if err := tx.CreateSpore(ctx, storetest.Spore(id)); err != nil {
					return err
				}
				if _, err := tx.Append(ctx, id, []state.Event{{Kind: state.KindLifecycle, Action: "created"}}); err != nil {
					return err
				}
				if i > 0 {
					return tx.DeleteSpore(ctx, fmt.Sprintf("churn-%s-%d", tag, i-1))
				}
				return nil
			})
			if err != nil {
				fmt.Fprintln(os.Stderr, "churn:", err)
				return 1
			}
		}
		err := s.Update(ctx, func(tx state.Tx) error {
			evs := make([]state.Event, batch)
			for j, txt := range texts {
				evs[j] = state.Event{Kind: state.KindPrompt, From: "user:crash", Text: txt}
			}
			if _, err := tx.Append(ctx, id, evs); err != nil {
				return err
			}
			// A second row in the same transaction: its outbox and the
			// events above must land together or not at all.
			_, err := tx.Enqueue(ctx, state.OutboxEntry{ID: msg, Spore: crashSpores[(i+1)%len(crashSpores)], From: "user:crash", Text: msg})
			return err
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, "update:", err)
			return 1
		}
		for _, txt := range texts {
			fmt.Fprintln(out, "ack", txt)
		}
		fmt.Fprintln(out, "msg", msg)
		out.Flush()
	}
	return 0
}

type writerProc struct {
	cmd   *exec.Cmd
	acks  []string
	msgs  []string
	ready chan struct{} // closed when the writer has opened the store
	done  chan struct{}
}

func startWriter(t *testing.T, root, tag string, count int, extraEnv ...string) *writerProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), envHelper+"=writer", envStore+"="+root, envTag+"="+tag, envCount+"="+strconv.Itoa(count))
	cmd.Env = append(cmd.Env, extraEnv...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	w := &writerProc{cmd: cmd, ready: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			kind, v, _ := strings.Cut(sc.Text(), " ")
			switch kind {
			case "ready":
				close(w.ready)
			case "ack":
				w.acks = append(w.acks, v)
			case "msg":
				w.msgs = append(w.msgs, v)
			}
		}
	}()
	return w
}

// waitReady waits until the writer has opened the store; false if it
// ended first.
func (w *writerProc) waitReady(t *testing.T) bool {
	t.Helper()
	select {
	case <-w.ready:
		return true
	case <-w.done:
		return false
	case <-time.After(time.Minute):
		t.Fatal("the writer did not open the store in a minute")
		return false
	}
}

// wait reaps the writer and returns its acknowledged writes.
func (w *writerProc) wait() {
	<-w.done
	_ = w.cmd.Wait()
}

func newCrashStore(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "store")
	s, _, err := Init(context.Background(), root, state.Settings{Runtime: "local"}, Options{})
	require.NoError(t, err)
	require.NoError(t, s.Update(context.Background(), func(tx state.Tx) error {
		for _, id := range crashSpores {
			if err := tx.CreateSpore(context.Background(), storetest.Spore(id)); err != nil {
				return err
			}
		}
		return nil
	}))
	return root
}

// verifyStore opens root afresh and checks every acknowledged write is
// present exactly once and nothing is present twice.
func verifyStore(t *testing.T, root string, acks, msgs []string) {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, root, Options{})
	require.NoError(t, err)
	rep, err := s.Check(ctx)
	require.NoError(t, err)
	require.Empty(t, rep.Problems, "check after crash")
	seen := map[string]int{}
	queued := map[string]int{}
	require.NoError(t, s.View(ctx, func(tx state.Tx) error {
		for _, id := range crashSpores {
			evs, err := tx.Events(ctx, id, 0, 0)
			require.NoError(t, err)
			for i, e := range evs {
				require.Equal(t, uint64(i+1), e.Seq)
				if e.Kind == state.KindPrompt {
					seen[e.Text]++
				}
			}
			out, err := tx.Outbox(ctx, id)
			require.NoError(t, err)
			for _, m := range out {
				queued[m.ID]++
			}
		}
		return nil
	}))
	for txt, n := range seen {
		require.LessOrEqual(t, n, 1, "event %q present %d times", txt, n)
	}
	for _, a := range acks {
		require.Equal(t, 1, seen[a], "acknowledged event %q lost", a)
	}
	for _, m := range msgs {
		require.Equal(t, 1, queued[m], "acknowledged message %q lost", m)
	}
	// Every event of a transaction and its message landed together.
	for m := range queued {
		prefix := strings.TrimSuffix(m, "-m"+m[strings.LastIndex(m, "-m")+2:])
		i := m[strings.LastIndex(m, "-m")+2:]
		require.Equal(t, 1, seen[prefix+"-"+i+"-0"], "message %s without its events", m)
	}
	// The next writer recovers and check stays clean.
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		_, err := tx.Append(ctx, crashSpores[0], []state.Event{{Kind: state.KindLifecycle, Action: "recovered"}})
		return err
	}))
	rep, err = s.Check(ctx)
	require.NoError(t, err)
	require.Empty(t, rep.Problems, "check after recovery write")
	// The recovery write (this handle's first) removed every event log a
	// crash left that no row names.
	require.Empty(t, orphanNotes(rep), "event logs left behind after the next writer")
}

func TestCrashRandomKill(t *testing.T) {
	root := newCrashStore(t)
	rounds := 40
	if testing.Short() {
		rounds = 8
	}
	var acks, msgs []string
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for round := 0; round < rounds; round++ {
		compact := "0"
		if round%2 == 1 {
			compact = "2048" // compaction every few commits
		}
		env := []string{envCompact + "=" + compact}
		if round%4 >= 2 {
			// Spores created and deleted: logs that come and go, and
			// the sweep of every writer's first commit.
			env = append(env, envChurn+"=1")
		}
		w := startWriter(t, root, fmt.Sprintf("r%d", round), 0, env...)
		// Most kills are timed from the writer's open of the store, so
		// that a slow start (a loaded machine, the race detector) does not
		// leave every round killed before its first commit; every eighth
		// from its start, which may land in the open itself.
		if round%8 != 7 && !w.waitReady(t) {
			w.wait()
			t.Fatalf("round %d: the writer ended before it opened the store", round)
		}
		time.Sleep(time.Duration(5+r.IntN(80)) * time.Millisecond)
		require.NoError(t, w.cmd.Process.Signal(syscall.SIGKILL))
		w.wait()
		acks = append(acks, w.acks...)
		msgs = append(msgs, w.msgs...)
		verifyStore(t, root, acks, msgs)
	}
	t.Logf("%d rounds, %d acknowledged events survived SIGKILL", rounds, len(acks))
	require.NotEmpty(t, acks, "no writer got as far as a commit; the harness proved nothing")
}

// TestCrashAtFailpoints kills the writer at each step of a commit and of a
// compaction (format §5, §7).
func TestCrashAtFailpoints(t *testing.T) {
	points := []string{"events-written", "commit-written", "committed", "head-written", "compact-log-created", "compact-snapshot-written"}
	for _, fp := range points {
		t.Run(fp, func(t *testing.T) {
			root := newCrashStore(t)
			var acks, msgs []string
			for round := 1; round <= 4; round++ {
				w := startWriter(t, root, fmt.Sprintf("%s-%d", fp, round), 50,
					envFailpoint+"="+fp+":"+strconv.Itoa(round*2), envCompact+"=1500")
				w.wait()
				ws, _ := w.cmd.ProcessState.Sys().(syscall.WaitStatus)
				require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "writer should have died at %s, exit %v", fp, w.cmd.ProcessState)
				acks = append(acks, w.acks...)
				msgs = append(msgs, w.msgs...)
				verifyStore(t, root, acks, msgs)
			}
		})
	}
}

// TestConcurrentProcesses runs several writer processes at once against
// the same spores: all succeed in turn, nothing is lost or duplicated.
func TestConcurrentProcesses(t *testing.T) {
	root := newCrashStore(t)
	const procs, each = 4, 40
	var wg sync.WaitGroup
	ws := make([]*writerProc, procs)
	for i := range ws {
		ws[i] = startWriter(t, root, fmt.Sprintf("p%d", i), each, envCompact+"=8192")
	}
	var acks, msgs []string
	for _, w := range ws {
		wg.Add(1)
		go func(w *writerProc) { defer wg.Done(); w.wait() }(w)
	}
	wg.Wait()
	for _, w := range ws {
		require.True(t, w.cmd.ProcessState.Success(), "writer failed: %v", w.cmd.ProcessState)
		require.Len(t, w.msgs, each)
		acks = append(acks, w.acks...)
		msgs = append(msgs, w.msgs...)
	}
	verifyStore(t, root, acks, msgs)
	total := 0
	s, err := Open(context.Background(), root, Options{})
	require.NoError(t, err)
	require.NoError(t, s.View(context.Background(), func(tx state.Tx) error {
		for _, id := range crashSpores {
			h, err := tx.Head(context.Background(), id)
			require.NoError(t, err)
			total += int(h.LastSeq)
		}
		return nil
	}))
	require.Equal(t, len(acks)+1, total, "every acknowledged event plus the recovery event")
}

// TestCheckWhileWriting runs check in a loop while another process creates
// and deletes spores: a check never reports a problem a race made up.
func TestCheckWhileWriting(t *testing.T) {
	root := newCrashStore(t)
	w := startWriter(t, root, "churn", 300, envCompact+"=4096", envChurn+"=1")
	ctx := context.Background()
	s, err := Open(ctx, root, Options{})
	require.NoError(t, err)
	checks := 0
	for {
		select {
		case <-w.done:
			w.wait()
			require.True(t, w.cmd.ProcessState.Success())
			require.Positive(t, checks)
			t.Logf("%d checks during %d commits", checks, len(w.msgs))
			return
		default:
		}
		rep, err := s.Check(ctx)
		require.NoError(t, err)
		require.Empty(t, rep.Problems, "check %d", checks)
		checks++
	}
}
