package reconcile

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

// TestAfterAct: the row reconcile prints of each spore is the spore after
// the pass acted, and what NeedsAttention is asked of it follows.
func TestAfterAct(t *testing.T) {
	due := time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC)
	running := Observed{Pod: PodRunning, Bridge: BridgeUp}
	dead := Observed{Pod: PodAbsent, LastTermination: ReasonExited}
	spore := func(desired state.Desired, health policy.Health) state.Spore {
		sp := state.Spore{Wish: state.Wish{ID: "a", Desired: desired}}
		sp.Health = health
		return sp
	}
	type row struct {
		Effective policy.Health
		Reason    string
		After     policy.After
	}
	for _, tc := range []struct {
		name string
		plan SporePlan
		dry  bool
		want row
	}{
		{"restarted", SporePlan{Spore: spore(state.Running, policy.Healthy), Observed: dead, Start: true, Crash: true, Verdict: Verdict{policy.Dead, ReasonExited, "Exited"}},
			false, row{policy.Starting, "restarted after Exited", policy.After{Health: policy.Starting}}},
		{"a dry run did not restart it", SporePlan{Spore: spore(state.Running, policy.Healthy), Observed: dead, Start: true, Crash: true, Verdict: Verdict{policy.Dead, ReasonExited, "Exited"}},
			true, row{policy.Dead, "Exited", policy.After{Health: policy.Dead}}},
		{"its start refused", SporePlan{Spore: spore(state.Running, policy.Healthy), Observed: dead, Start: true, StartErr: errors.New("no room"), Verdict: Verdict{policy.Dead, ReasonExited, "Exited"}},
			false, row{policy.Dead, "start failed: no room", policy.After{Health: policy.Dead, StartFailed: true}}},
		{"a start a newer wish overtook", SporePlan{Spore: spore(state.Running, policy.Healthy), Observed: dead, Start: true, StartErr: errWishChanged, Verdict: Verdict{policy.Dead, ReasonExited, "Exited"}},
			false, row{policy.Dead, "Exited", policy.After{Health: policy.Dead}}},
		{"slept for idleness", SporePlan{Spore: spore(state.Paused, policy.Healthy), Observed: running, Stop: true, SleepIdle: true, Idle: 90 * time.Second, Verdict: Verdict{policy.Diverged, ReasonRunsWhileAsleep, "Running while desired Paused"}},
			false, row{policy.Paused, "asleep: idle for 1m30s", policy.After{Health: policy.Paused}}},
		{"its stop failed", SporePlan{Spore: spore(state.Paused, policy.Healthy), Observed: running, Stop: true, StopErr: errors.New("busy"), Verdict: Verdict{policy.Diverged, ReasonRunsWhileAsleep, "Running while desired Paused"}},
			false, row{policy.Diverged, "Running while desired Paused", policy.After{Health: policy.Diverged}}},
		{"waiting out its backoff", SporePlan{Spore: spore(state.Running, policy.Dead), Observed: dead, Due: due, Verdict: Verdict{policy.Dead, ReasonExited, "Exited"}},
			false, row{policy.Dead, "Exited", policy.After{Health: policy.Dead, NotBefore: due}}},
		{"coming up after its start", SporePlan{Spore: spore(state.Running, policy.Starting), Observed: Observed{Pod: PodRunning, Bridge: BridgeDown}, Verdict: Verdict{policy.Suspect, ReasonBridgeNotAnswer, "bridge not answering"}},
			false, row{policy.Suspect, "bridge not answering", policy.After{Health: policy.Suspect, ComingUp: true, Started: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.plan
			h := SporeHealth{ID: "a", Effective: p.Verdict.Effective, Reason: p.Verdict.Text, Code: p.Verdict.Code}
			out := &Outcome{Result: Result{Spores: []SporeHealth{h}}, Plans: []*SporePlan{&p}}
			res, afters := out.AfterAct(tc.dry)
			got := row{res.Spores[0].Effective, res.Spores[0].Reason, afters[0]}
			// NotStarted follows the recorded health; not what this table is about.
			got.After.NotStarted = false
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("AfterAct (-want +got):\n%s", diff)
			}
			// The outcome's rows stay as observed, whatever AfterAct made.
			if out.Spores[0] != h {
				t.Fatalf("AfterAct changed the outcome's row: %+v", out.Spores[0])
			}
		})
	}
}

// A pass that acted on nothing makes no copy of the fleet's rows; one
// that acted on one spore copies them once, and the others' rows are as
// observed.
func TestAfterActCopiesOnlyWhenARowChanges(t *testing.T) {
	dead := Observed{Pod: PodAbsent, LastTermination: ReasonExited}
	rows := []SporeHealth{{ID: "a", Effective: policy.Paused}, {ID: "b", Effective: policy.Dead, Reason: "Exited"}, {ID: "c", Effective: policy.Paused}}
	plans := func(start bool) []*SporePlan {
		var ps []*SporePlan
		for _, r := range rows {
			p := &SporePlan{Spore: state.Spore{Wish: state.Wish{ID: r.ID, Desired: state.Paused}}}
			if r.ID == "b" && start {
				p.Spore.Desired, p.Observed, p.Start, p.Verdict = state.Running, dead, true, Verdict{policy.Dead, ReasonExited, "Exited"}
			}
			ps = append(ps, p)
		}
		return ps
	}
	quiet := &Outcome{Result: Result{Spores: slices.Clone(rows)}, Plans: plans(false)}
	res, _ := quiet.AfterAct(false)
	if &res.Spores[0] != &quiet.Spores[0] || !slices.Equal(res.Spores, rows) {
		t.Fatalf("a pass that acted on nothing copied its rows or changed them: %+v", res.Spores)
	}

	acted := &Outcome{Result: Result{Spores: slices.Clone(rows)}, Plans: plans(true)}
	res, _ = acted.AfterAct(false)
	if &res.Spores[0] == &acted.Spores[0] || !slices.Equal(acted.Spores, rows) {
		t.Fatal("the outcome's rows were changed, not copied")
	}
	if res.Spores[1].Effective != policy.Starting || res.Spores[0] != rows[0] || res.Spores[2] != rows[2] {
		t.Fatalf("after act: %+v", res.Spores)
	}
}
