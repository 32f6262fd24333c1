package main

// The loop's row (docs/cli.md "The loop"): `reconcile --every` SIGKILLed
// at random points and started again, over and over, while a bridge is
// killed under it and prompts arrive; healing and idle sleep go on from
// whatever each kill left, nothing recorded is lost, every prompt is
// delivered once, and SIGTERM ends the loop with 0 after its pass.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/internal/testutil"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/pgstore/pgtest"
)

func TestLoopSurvivesSIGKILL(t *testing.T) {
	r := newRig(t, nil, echoInit()...)
	// The idler sleeps after a minute idle (its colony's); the healer's
	// colony never sleeps, so only its kills and prompts move it.
	r.ok("colony", "set", "default", "--sleep-after", "1m")
	idler, healer := "loop-idler", "loop-healer"
	r.wake(idler)
	t.Cleanup(func() { r.cleanup(healer) })
	r.ok("create", healer, "--colony", "lab", "--wake")
	r.ok("wake", healer, "--wait", "20s")
	r.waitHealthy(healer, 30*time.Second)
	idleFrom := time.Now()

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 38))
	var prompts []sent
	killedLoops, killedBridges := 0, 0
	// Past the idler's minute, so some killed loop meets its sleep.
	for round := 0; round < 12 || time.Since(idleFrom) < idleWait+5*time.Second; round++ {
		before := map[string][]state.Event{idler: r.storedEvents(idler), healer: r.storedEvents(healer)}
		if round%3 == 1 && len(r.bridgePIDs(healer)) == 1 {
			r.killBridge(healer)
			killedBridges++
		}
		if round%2 == 0 {
			text := fmt.Sprintf("round %d", round)
			id, _ := r.prompt(healer, text)
			prompts = append(prompts, sent{id: id, text: text, acked: true})
		}
		// Anywhere from before its first pass to several passes in.
		delay := time.Duration(rng.IntN(1500)) * time.Millisecond
		res, killed := r.runKilledAfter(delay, "reconcile", "--every", "200ms")
		require.True(t, killed, "the loop ended on its own: %s", res)
		killedLoops++
		what := fmt.Sprintf("round %d, the loop killed after %s", round, delay)
		r.ok("check")
		for id, evs := range before {
			requirePrefix(t, evs, r.storedEvents(id), what+": "+id)
		}
		sp, _ := r.record(idler)
		if sp.Desired == state.Paused {
			require.Equal(t, state.ByIdle, sp.DesiredBy, "%s: the idler slept by %s", what, sp.DesiredBy)
		}
	}
	t.Logf("%d loops SIGKILLed at random, %d bridges killed under them, %d prompts sent", killedLoops, killedBridges, len(prompts))

	// A loop left to run: the idler asleep and stopped, the healer
	// running and healthy with nothing left in its outbox.
	loop := r.cmd("reconcile", "--every", "200ms")
	var out, errb testutil.Buffer
	loop.Stdout, loop.Stderr = &out, &errb
	require.NoError(t, loop.Start())
	done := make(chan error, 1)
	go func() { done <- loop.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		// At least one pass of this loop (its signal handler is set up
		// by then), and the colony round.
		passed := strings.Contains(errb.String(), "Z reconcile: ")
		is, _ := r.record(idler)
		hs, pending := r.record(healer)
		if passed && is.Desired == state.Paused && is.DesiredBy == state.ByIdle && len(r.procs(idler)) == 0 &&
			hs.Health == "Healthy" && len(r.bridgePIDs(healer)) == 1 && len(pending) == 0 {
			break
		}
		if time.Now().After(deadline) {
			_ = loop.Process.Kill()
			t.Fatalf("the loop did not bring the colony round within 60s: idler %s by %q (%d processes), healer %s, %d pending\nstderr: %s",
				is.Desired, is.DesiredBy, len(r.procs(idler)), hs.Health, len(pending), errb.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	// SIGTERM: the pass in flight ends, then the loop, with 0.
	require.NoError(t, loop.Process.Signal(syscall.SIGTERM))
	var err error
	select {
	case err = <-done:
	case <-time.After(commandTimeout):
		_ = loop.Process.Kill()
		t.Fatalf("the loop did not end after SIGTERM: %s", errb.String())
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		t.Fatalf("the loop ended with %v after SIGTERM: %s", ee, errb.String())
	}
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
	require.Equal(t, "reconcile: stopped", lines[len(lines)-1], "stderr: %s", errb.String())
	require.Contains(t, out.String(), "EFFECTIVE", "the table was printed")

	evs := r.events(healer)
	require.GreaterOrEqual(t, count(evs, state.KindLifecycle, "restart"), 1, "the killed bridges were restarted")
	require.Empty(t, r.procs(idler), "the idler sleeps")
	r.settle(healer, 30*time.Second)
	// A bridge killed mid-turn runs that turn again from its journal.
	retried := map[string]bool{}
	for _, p := range prompts {
		retried[p.id] = true
	}
	r.requireIntact(healer, expect{prompts: prompts, retried: retried})
}

// TestLoopsOverlapOnPostgres: two loops over one PostgreSQL store, as a
// standby beside the loop or a loop beside the CronJob run: neither
// divides the work, both do all of it, and every overlap is harmless —
// each killed bridge is restarted once (the second start finds it
// running), each prompt delivered once, and both end on SIGTERM with 0.
func TestLoopsOverlapOnPostgres(t *testing.T) {
	pgtest.Shared(t) // skips without PostgreSQL, fails in CI
	r := newIdleRig(t, "postgres")
	r.ok("colony", "set", "default", "--sleep-after", "0")
	id := "loop-pg"
	r.wakeIdle(id)

	type running struct {
		cmd  *exec.Cmd
		errb *testutil.Buffer
		done chan error
	}
	var loops []running
	for range 2 {
		c := r.cmd("reconcile", "--every", "100ms")
		errb := &testutil.Buffer{}
		c.Stdout, c.Stderr = &testutil.Buffer{}, errb
		require.NoError(t, c.Start())
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		loops = append(loops, running{c, errb, done})
		t.Cleanup(func() { _ = c.Process.Kill() })
	}
	for _, l := range loops {
		waitFor(t, 30*time.Second, func() bool { return strings.Contains(l.errb.String(), "Z reconcile: ") }, "each loop's first pass")
	}
	var prompts []sent
	const kills = 3
	for k := range kills {
		require.Len(t, r.bridgePIDs(id), 1)
		old := r.killBridge(id)
		text := fmt.Sprintf("after kill %d", k)
		pid, _ := r.prompt(id, text)
		prompts = append(prompts, sent{id: pid, text: text, acked: true})
		waitFor(t, 60*time.Second, func() bool {
			sp, pending := r.record(id)
			pids := r.bridgePIDs(id)
			return sp.Health == "Healthy" && len(pids) == 1 && pids[0] != old && len(pending) == 0
		}, "the loops to heal the bridge and deliver")
	}
	for _, l := range loops {
		require.NoError(t, l.cmd.Process.Signal(syscall.SIGTERM))
	}
	for i, l := range loops {
		select {
		case err := <-l.done:
			require.NoError(t, err, "loop %d after SIGTERM: %s", i, l.errb.String())
		case <-time.After(commandTimeout):
			t.Fatalf("loop %d did not end after SIGTERM", i)
		}
		require.True(t, strings.HasSuffix(l.errb.String(), "reconcile: stopped\n"), "loop %d: %s", i, l.errb.String())
	}
	r.settle(id, 30*time.Second)
	require.Equal(t, kills, count(r.events(id), state.KindLifecycle, "restart"), "each kill restarted once, by one of the loops")
	retried := map[string]bool{}
	for _, p := range prompts {
		retried[p.id] = true
	}
	r.requireIntact(id, expect{prompts: prompts, retried: retried})
}

// waitFor polls cond until it holds, failing the test after timeout.
func waitFor(t *testing.T, timeout time.Duration, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
