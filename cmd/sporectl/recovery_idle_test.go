package main

// The idle-sleep rows (docs/sleep.md): an idle spore is put to sleep by
// a reconcile, and a message without --wake brings it back on the same
// session where its colony wakes on a message; a reconcile SIGKILLed at
// random points while it puts spores to sleep leaves each awake and
// running or asleep and, after the next pass, stopped.

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/pgstore/pgtest"
)

// idleWait is how long the rows leave their spores idle: past the
// colony's sleep-after (1m, the shortest allowed), with the time a pass
// takes.
const idleWait = time.Minute + 5*time.Second

// sleptStatus is what status says of why a spore sleeps.
type sleptStatus struct {
	Spores []struct {
		ID        string `json:"id"`
		Desired   string `json:"desired"`
		Effective string `json:"effective"`
		Reason    string `json:"reason"`
		SleptBy   string `json:"slept_by"`
	} `json:"spores"`
}

func (r *rig) slept(id string) (desired, effective, reason, by string) {
	r.t.Helper()
	res := r.run("status", "-o", "json", id)
	var doc sleptStatus
	require.NoError(r.t, json.Unmarshal([]byte(res.stdout), &doc), "status: %s", res)
	require.Len(r.t, doc.Spores, 1)
	s := doc.Spores[0]
	return s.Desired, s.Effective, s.Reason, s.SleptBy
}

// newIdleRig is a rig on a directory or PostgreSQL store with the echo
// agent whose colony "default" sleeps after 1m idle and wakes on a
// message.
func newIdleRig(t *testing.T, kind string) *rig {
	var r *rig
	switch kind {
	case "dir":
		r = newRig(t, nil, echoInit()...)
	case "postgres":
		stateHome := t.TempDir()
		r = &rig{t: t, store: pgtest.NewDatabase(t), env: []string{"XDG_STATE_HOME=" + stateHome}, root: "/nonexistent"}
		r.ok(append([]string{"init"}, echoInit()...)...)
	}
	require.Equal(t, "colony/default configured\n", r.ok("colony", "set", "default", "--sleep-after", "1m", "--wake-on-message"))
	return r
}

// wakeIdle is rig.wake for a rig whose local directory may not be known
// yet (PostgreSQL): found once the first spore exists.
func (r *rig) wakeIdle(id string) {
	r.t.Helper()
	if r.root == "/nonexistent" {
		r.t.Cleanup(func() { r.cleanup(id) })
		r.ok("create", id, "--wake")
		var stateHome string
		for _, e := range r.env {
			if v, ok := strings.CutPrefix(e, "XDG_STATE_HOME="); ok {
				stateHome = v
			}
		}
		roots, err := filepath.Glob(filepath.Join(stateHome, "sporectl", "local", "*"))
		require.NoError(r.t, err)
		require.Len(r.t, roots, 1, "the local runtime's directory for this store")
		r.root = roots[0]
		r.ok("wake", id, "--wait", "20s")
		r.waitHealthy(id, 30*time.Second)
		return
	}
	r.wake(id)
}

// TestRecoveryIdleSleepAndWakeOnMessage — an awake spore left idle past
// its colony's sleep-after is put to sleep by reconcile (recorded by idle,
// its processes ended, status saying why); a prompt without --wake wakes
// it, since its colony wakes on a message, and it answers on the same
// home and the same session. On both stores.
func TestRecoveryIdleSleepAndWakeOnMessage(t *testing.T) {
	for _, kind := range []string{"dir", "postgres"} {
		t.Run(kind, func(t *testing.T) {
			if kind == "postgres" {
				pgtest.Shared(t) // skips without PostgreSQL, fails in CI
			}
			t.Parallel() // the two wait out their idle time together
			r := newIdleRig(t, kind)
			id := "idle-" + kind[:3]
			r.wakeIdle(id)
			files := map[string]string{"work/notes.txt": "written before it slept\n"}
			for rel, c := range files {
				r.writeHome(id, rel, c)
			}
			p1, st := r.prompt(id, "before it sleeps")
			require.Equal(t, "delivered", st)
			r.settle(id, 30*time.Second)
			session := r.bridgeStatus(id).SessionID
			require.NotEmpty(t, session)

			// Not idle long enough: a reconcile leaves it awake.
			rep, _ := r.reconcile(id)
			require.Equal(t, "Running", rep.spore(t, id).Desired)
			time.Sleep(idleWait)

			rep, _ = r.reconcile(id)
			require.True(t, rep.did(id, "sleep"), "reconcile puts an idle spore to sleep: %+v", rep.Actions)
			require.Empty(t, r.procs(id), "its processes are gone")
			desired, effective, reason, by := r.slept(id)
			require.Equal(t, "Paused", desired)
			require.Equal(t, "Paused", effective)
			require.Equal(t, "idle", by)
			require.Equal(t, "asleep: idle for 1m0s", reason)
			sp, _ := r.record(id)
			require.Equal(t, state.ByIdle, sp.DesiredBy)
			evs := r.events(id)
			i := slices.IndexFunc(evs, func(e state.Event) bool { return e.Action == "sleep" && e.From == "sporectl:idle" })
			require.GreaterOrEqual(t, i, 0, "a sleep event from sporectl:idle")
			require.Contains(t, evs[i].Text, "desired Running → Paused: idle for 1m")
			require.Greater(t, slices.IndexFunc(evs, func(e state.Event) bool { return e.Action == "stop" && e.Seq > evs[i].Seq }), i,
				"the sleep is recorded before the stop")

			// A prompt without --wake wakes it: idle put it to sleep.
			p2, st := r.prompt(id, "after it slept")
			require.Equal(t, "delivered", st)
			r.settle(id, 30*time.Second)
			require.Equal(t, session, r.bridgeStatus(id).SessionID, "the same session after the wake")
			desired, _, _, by = r.slept(id)
			require.Equal(t, "Running", desired)
			require.Empty(t, by)
			var started []bridgeLine
			for _, e := range r.events(id) {
				if l := parseLine(t, e.Line); l.Subtype == "bridge_started" {
					started = append(started, l)
				}
			}
			require.Len(t, started, 2, "started twice: created, and woken by the message")
			require.Equal(t, started[0].Session, started[1].Session, "the same session")
			r.requireIntact(id, expect{echo: true, files: files, prompts: []sent{
				{id: p1, text: "before it sleeps", acked: true}, {id: p2, text: "after it slept", acked: true}}})

			// A person's sleep is not undone by a message.
			r.ok("sleep", id)
			res := r.run("prompt", id, "while a person has it asleep")
			require.Equal(t, 10, res.code, "%s", res)
			desired, _, reason, by = r.slept(id)
			require.Equal(t, "Paused", desired)
			require.Equal(t, "person", by)
			require.Equal(t, "asleep: by a person", reason)
		})
	}
}

// TestRecoveryIdleSleepReconcileKilled — reconciles SIGKILLed at random
// points while they put idle spores to sleep. After each kill every spore
// is wished awake with its processes running, or wished asleep (by idle);
// one wished asleep whose processes the killed pass did not end yet has
// them ended by the next reconcile. check is clean throughout and no
// event committed before a kill is lost.
func TestRecoveryIdleSleepReconcileKilled(t *testing.T) {
	r := newIdleRig(t, "dir")
	ids := []string{"idle-k1", "idle-k2", "idle-k3", "idle-k4", "idle-k5", "idle-k6"}
	for _, id := range ids {
		r.wake(id)
	}
	for _, id := range ids {
		r.settle(id, 30*time.Second)
	}
	sessions := map[string]string{}
	for _, id := range ids {
		sessions[id] = r.bridgeStatus(id).SessionID
	}
	time.Sleep(idleWait)

	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	killed, halfway := 0, 0
	asleep := func() bool {
		for _, id := range ids {
			if sp, _ := r.record(id); sp.Desired != state.Paused || len(r.procs(id)) > 0 {
				return false
			}
		}
		return true
	}
	for round := 0; round < 16 && !asleep(); round++ {
		before := map[string][]state.Event{}
		for _, id := range ids {
			before[id] = r.storedEvents(id)
		}
		// Later each round, at a random point of its slot: the kills
		// walk through the pass (load, observe, the sleeps' transaction,
		// the stops, the commit) until one lets it finish.
		delay := time.Duration(round*25_000+rng.IntN(25_000)) * time.Microsecond
		res, k := r.runKilledAfter(delay, "reconcile")
		if k {
			killed++
		} else {
			require.Contains(t, []int{0, 3}, res.code, "%s", res)
		}
		what := fmt.Sprintf("round %d, reconcile killed after %s", round, delay)
		r.ok("check")
		for _, id := range ids {
			requirePrefix(t, before[id], r.storedEvents(id), what+": "+id)
			sp, _ := r.record(id)
			switch sp.Desired {
			case state.Running:
				require.NotEmpty(t, r.bridgePIDs(id), "%s: %s is wished awake but nothing runs", what, id)
				require.Empty(t, sp.DesiredBy)
			case state.Paused:
				require.Equal(t, state.ByIdle, sp.DesiredBy, "%s: %s", what, id)
				if len(r.procs(id)) > 0 {
					// Killed between recording the sleep and the stop:
					// the next pass ends them.
					halfway++
				}
			default:
				t.Fatalf("%s: %s is %s", what, id, sp.Desired)
			}
		}
	}
	t.Logf("%d reconciles SIGKILLed at random; %d times a spore was left wished asleep with its processes running", killed, halfway)

	// Whatever the kills left, one whole pass puts every idle spore to
	// sleep and ends its processes; a message wakes each on its session.
	rep, _ := r.reconcile()
	for _, id := range ids {
		s := rep.spore(t, id)
		require.Equal(t, "Paused", s.Desired, "%+v", s)
		require.Empty(t, r.procs(id), "%s", id)
		// The report's health is what the pass observed before it acted:
		// when every round was killed (a loaded machine makes each pass
		// outlast its slot), a spore left asleep with its processes
		// running is Diverged there, and this pass ended them. What
		// status says now must be true.
		now, _ := r.status(id)
		r.requireTruthful(id, now)
	}
	for _, id := range ids {
		_, st := r.prompt(id, "wake up, "+id)
		require.Equal(t, "delivered", st)
		r.settle(id, 30*time.Second)
		require.Equal(t, sessions[id], r.bridgeStatus(id).SessionID, "%s: the same session", id)
	}
}
