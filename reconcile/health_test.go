package reconcile

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sporectl/sporectl/state"
)

func TestHealth(t *testing.T) {
	up := Observed{Pod: PodRunning, Bridge: BridgeUp, Activity: "idle"}
	cases := []struct {
		name    string
		desired state.Desired
		obs     Observed
		breaker bool
		want    Effective
		reason  string
	}{
		{"running and answering", state.Running, up, false, Healthy, ""},
		{"working", state.Running, Observed{Pod: PodRunning, Bridge: BridgeUp, Activity: "working"}, false, Healthy, ""},
		{"blocked on a person", state.Running, Observed{Pod: PodRunning, Bridge: BridgeUp, Activity: "blocked"}, false, Blocked, "the agent waits for a person"},
		{"nothing running", state.Running, Observed{Pod: PodAbsent, Bridge: BridgeDown}, false, Dead, "nothing running"},
		{"oom killed", state.Running, Observed{Pod: PodFailed, Bridge: BridgeDown, Reason: "OOMKilled"}, false, Dead, "OOMKilled"},
		{"exited locally", state.Running, Observed{Pod: PodFailed, Bridge: BridgeDown, Reason: "Exited"}, false, Dead, "Exited"},
		{"bridge down", state.Running, Observed{Pod: PodRunning, Bridge: BridgeDown}, false, Suspect, "bridge not answering"},
		{"bridge unknown", state.Running, Observed{Pod: PodRunning, Bridge: BridgeUnknown}, false, Suspect, "bridge state unknown"},
		{"pending", state.Running, Observed{Pod: PodPending, Bridge: BridgeUnknown}, false, Suspect, "pending"},
		{"unknown pod", state.Running, Observed{Pod: PodUnknown}, false, Suspect, "runtime state unknown"},
		{"terminating while wanted", state.Running, Observed{Pod: PodTerminating}, false, Diverged, "terminating while desired Running"},
		{"two pods", state.Running, Observed{Pod: PodRunning, Bridge: BridgeUnknown, Reason: "MultiplePods"}, false, Diverged, "more than one pod or process tree for this spore"},
		{"breaker open beats all", state.Running, up, true, Error, "circuit breaker open after repeated crashes; run `sporectl reset`"},
		{"asleep", state.Paused, Observed{Pod: PodAbsent}, false, Paused, ""},
		{"asleep, old failure", state.Paused, Observed{Pod: PodFailed, Reason: "Exited"}, false, Paused, ""},
		{"falling asleep", state.Paused, Observed{Pod: PodTerminating}, false, Paused, "terminating"},
		{"awake while asleep", state.Paused, up, false, Diverged, "Running while desired Paused"},
		{"stopped", state.Stopped, Observed{Pod: PodAbsent}, false, Stopped, ""},
		{"pending while stopped", state.Stopped, Observed{Pod: PodPending}, false, Diverged, "Pending while desired Stopped"},
		{"stopped with open breaker", state.Stopped, Observed{Pod: PodAbsent}, true, Error, "circuit breaker open after repeated crashes; run `sporectl reset`"},
		{"observation failed while asleep", state.Paused, Observed{Pod: PodUnknown, Bridge: BridgeUnknown, Reason: "ObservationFailed"}, false, Suspect, "ObservationFailed"},
		{"observation failed while stopped", state.Stopped, Observed{Pod: PodUnknown}, false, Suspect, "runtime state unknown"},
		{"bridge cannot append", state.Running, Observed{Pod: PodRunning, Bridge: BridgeUp, Activity: "idle", Reason: "BridgeUnhealthy"}, false, Suspect, "the bridge cannot append to its log"},
		{"agent keeps dying", state.Running, Observed{Pod: PodRunning, Bridge: BridgeUp, Activity: "backoff"}, false, Suspect, "the agent keeps dying; the bridge is backing off"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, reason := Health(c.desired, c.obs, c.breaker)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("effective (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.reason, reason); diff != "" {
				t.Errorf("reason (-want +got):\n%s", diff)
			}
		})
	}
}
