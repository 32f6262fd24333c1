package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/internal/testutil"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
)

// TestReconcileExitsThreeOnlyForWhatNeedsAPerson: reconcile's code is
// the fleet's after the pass acted (docs/exit-codes.md, code 3). What the
// pass put to sleep, started or backs off is no page; what it cannot put
// right is, and the line on stderr names it.
func TestReconcileExitsThreeOnlyForWhatNeedsAPerson(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup brings the colony to the pass under test.
		setup func(t *testing.T, c *fakeColony)
		code  int
		// out is in the table (the fleet after the pass), err on stderr.
		out, err []string
	}{
		{"a start after one that failed", func(t *testing.T, c *fakeColony) {
			c.rt.StartErr["a"] = errors.New("no room")
			c.run("", "create", "a", "--wake") // wished awake; its start fails
			delete(c.rt.StartErr, "a")
		}, ExitOK, []string{"Starting"}, nil},
		{"idle sleep", func(t *testing.T, c *fakeColony) {
			c.ok("create", "a", "--wake", "--sleep-after", "1m")
			c.ok("reconcile")
			c.ok("reconcile")
			c.now = c.now.Add(2 * time.Minute)
		}, ExitOK, []string{"Paused", "asleep: idle for 2m0s"}, []string{"a sleep: idle for 2m0s"}},
		{"budget sleep", func(t *testing.T, c *fakeColony) {
			c.ok("create", "a", "--wake", "--budget-tokens", "20")
			c.ok("reconcile")
			c.ok("reconcile")
			spend(t, c, "a", 24)
		}, ExitOK, []string{"Paused", "asleep: over budget (24/20 tokens today)"}, []string{"a sleep: over budget"}},
		{"a restart after a crash", func(t *testing.T, c *fakeColony) {
			c.ok("create", "a", "--wake")
			c.ok("reconcile")
			c.ok("reconcile")
			c.rt.Kill("a", "Exited")
		}, ExitOK, []string{"Starting", "restarted after Exited"}, []string{"a restart: after Exited"}},
		{"dead within its backoff", func(t *testing.T, c *fakeColony) {
			c.ok("create", "a", "--wake")
			c.ok("reconcile")
			c.ok("reconcile")
			c.rt.Kill("a", "Exited")
			c.ok("reconcile") // restarted: the next crash waits its backoff
			c.rt.Kill("a", "Exited")
		}, ExitOK, []string{"Dead"}, []string{"a wait: backing off"}},
		{"the breaker opens", func(t *testing.T, c *fakeColony) {
			c.ok("init", "--breaker-failures", "2")
			c.ok("create", "a", "--wake")
			c.ok("reconcile")
			c.ok("reconcile")
			c.rt.Kill("a", "OOMKilled")
			c.ok("reconcile")
			c.rt.Kill("a", "OOMKilled")
			c.now = c.now.Add(2 * time.Second)
		}, ExitUnhealthy, []string{"Error"}, []string{"reconcile: 1 of 1 spores need attention: a (Error: circuit breaker open"}},
		{"a start that failed", func(t *testing.T, c *fakeColony) {
			c.rt.StartErr["a"] = errors.New("no claude executable")
			c.run("", "create", "a", "--wake") // wished awake; its start fails
		}, ExitUnhealthy, []string{"Dead", "start failed: no claude executable"}, []string{"reconcile: 1 of 1 spores need attention: a (Dead: start failed: no claude executable)"}},
		{"the agent waits for a person", func(t *testing.T, c *fakeColony) {
			c.ok("create", "a", "--wake")
			c.ok("reconcile")
			c.rt.BridgeOf("a").SetState(bridge.StateBlocked)
		}, ExitUnhealthy, []string{"Blocked"}, []string{"a (Blocked: the agent waits for a person)"}},
		{"a bridge still down a pass after its restart", func(t *testing.T, c *fakeColony) {
			c.ok("create", "a", "--wake")
			c.ok("reconcile")
			c.rt.Kill("a", "Exited")
			c.ok("reconcile") // restarted
			c.rt.BridgeOf("a").SetUp(false)
			r := c.run("", "reconcile")
			require.Equal(t, ExitOK, r.code, "one pass of grace after its start: %s", r.err)
		}, ExitUnhealthy, []string{"Suspect"}, []string{"a (Suspect: bridge not answering)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFakeColony(t)
			tc.setup(t, c)
			r := c.run("", "reconcile")
			require.Equal(t, tc.code, r.code, "stdout:\n%s\nstderr:\n%s", r.out, r.err)
			for _, want := range tc.out {
				require.Contains(t, r.out, want)
			}
			for _, want := range tc.err {
				require.Contains(t, r.err, want)
			}
		})
	}
}

// spend records n tokens of a's model calls today, as the gateway counts
// them.
func spend(t *testing.T, c *fakeColony, id string, n int64) {
	t.Helper()
	st, err := dirstore.Open(t.Context(), c.store, dirstore.Options{})
	require.NoError(t, err)
	defer st.Close()
	ctx := t.Context()
	require.NoError(t, st.Update(ctx, func(tx state.Tx) error {
		_, err := state.CountModelCall(ctx, tx, id, "msg_1", state.Usage{InputTokens: n}, c.now)
		return err
	}))
}

// TestReconcileNamesTheFirstSporesThatNeedAttention: the summary line is
// bounded, so a fleet of failures is one readable line.
func TestReconcileNamesTheFirstSporesThatNeedAttention(t *testing.T) {
	c := newFakeColony(t)
	for i := range attentionShown + 2 {
		id := fmt.Sprintf("s%d", i)
		c.rt.StartErr[id] = errors.New("no room")
		c.run("", "create", id, "--wake") // wished awake; its start fails
	}
	r := c.run("", "reconcile")
	require.Equal(t, ExitUnhealthy, r.code, r.err)
	line := r.err[strings.Index(r.err, "reconcile: "):]
	require.Contains(t, line, "7 of 7 spores need attention: s0 (Dead: start failed: no room)")
	require.Contains(t, line, "s4 (Dead")
	require.NotContains(t, line, "s5 (")
	require.Contains(t, line, " and 2 more")
}

func TestReconcileLoopFlags(t *testing.T) {
	c := newFakeColony(t)
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--every", "abc"}, `invalid value "abc" for --every`},
		{[]string{"--every", "0"}, "invalid value 0s for --every: must be more than 0"},
		{[]string{"--every", "-5s"}, "invalid value -5s for --every"},
		{[]string{"--every", "1s", "--give-up-after", "-1s"}, "--give-up-after"},
		{[]string{"--give-up-after", "1m"}, "--give-up-after needs --every"},
		{[]string{"--every", "1s", "--dry-run"}, "--every and --dry-run do not go together"},
	} {
		r := c.run("", append([]string{"reconcile"}, tc.args...)...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", tc.args, r.err)
		require.Contains(t, r.err, tc.msg, "%v", tc.args)
	}
	o, err := parse(t, newCmdReconcile, "--every", "30s")
	require.NoError(t, err)
	require.Equal(t, 30*time.Second, o.Every)
	require.Equal(t, defaultGiveUpAfter, o.GiveUpAfter)
}

// TestReconcileLoopRunsPassesUntilStopped: the loop heals, sleeps and
// goes on through a pass that needs attention, prints the table again
// only when it changed, and a stop ends it with 0.
func TestReconcileLoopRunsPassesUntilStopped(t *testing.T) {
	c := newFakeColony(t)
	c.ok("create", "a", "--wake", "--sleep-after", "1m")
	c.rt.StartErr["b"] = errors.New("no room")
	c.run("", "create", "b", "--wake") // wished awake; its start fails
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut testutil.Buffer
	f := c.factory(strings.NewReader(""), &out, &errOut)
	passes := func() int { return strings.Count(errOut.String(), "Z reconcile: ") }
	done := make(chan int, 1)
	go func() { done <- RunWith(ctx, f, []string{"reconcile", "--every", "10ms"}) }()
	waitFor(t, func() bool { return passes() >= 3 }, "three passes")
	c.rt.Kill("a", "Exited")
	n := passes()
	waitFor(t, func() bool { return passes() >= n+2 }, "two passes after the kill")
	cancel()
	select {
	case code := <-done:
		require.Equal(t, ExitOK, code, errOut.String())
	case <-time.After(30 * time.Second):
		t.Fatal("the loop did not end after its context")
	}
	e := errOut.String()
	require.Contains(t, e, "a restart: after Exited", "the loop healed the killed spore")
	require.Contains(t, e, "b (Dead: start failed: no room)", "a pass that needs attention is said")
	require.Contains(t, e, "reconcile: stopped")
	// The first pass's table, then only changed ones: fewer than passes.
	tables := strings.Count(out.String(), "ID ")
	require.GreaterOrEqual(t, tables, 2, out.String())
	require.Less(t, tables, passes(), "an unchanged table is not printed again")
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
