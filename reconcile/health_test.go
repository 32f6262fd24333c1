package reconcile

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

func TestHealth(t *testing.T) {
	up := Observed{Pod: PodRunning, Bridge: BridgeUp, Activity: bridge.StateIdle, Pods: 1}
	with := func(o Observed, f func(*Observed)) Observed { f(&o); return o }
	cases := []struct {
		name    string
		desired state.Desired
		obs     Observed
		breaker bool
		want    policy.Health
		code    Reason
		text    string
	}{
		{"running and answering", state.Running, up, false, policy.Healthy, "", ""},
		{"working", state.Running, with(up, func(o *Observed) { o.Activity = bridge.StateWorking }), false, policy.Healthy, "", ""},
		{"blocked on a person", state.Running, with(up, func(o *Observed) { o.Activity = bridge.StateBlocked }), false, policy.Blocked, ReasonAgentBlocked, "the agent waits for a person"},
		{"nothing running", state.Running, Observed{Pod: PodAbsent, Bridge: BridgeDown}, false, policy.Dead, ReasonNothingRunning, "nothing running"},
		{"oom killed", state.Running, Observed{Pod: PodFailed, Bridge: BridgeDown, LastTermination: ReasonOOMKilled}, false, policy.Dead, ReasonOOMKilled, "OOMKilled"},
		{"exited locally", state.Running, Observed{Pod: PodFailed, Bridge: BridgeDown, LastTermination: ReasonExited}, false, policy.Dead, ReasonExited, "Exited"},
		{"exited, with the bridge's own words", state.Running, Observed{Pod: PodFailed, Bridge: BridgeDown, LastTermination: ReasonExited, Exited: true, Message: "no claude executable"}, false, policy.Dead, ReasonExited, "Exited: no claude executable"},
		{"crash loop, with the container's message", state.Running, Observed{Pod: PodRunning, Bridge: BridgeDown, Pods: 1, LastTermination: "Error", Exited: true, Message: "listen on :8080: address in use"}, false, policy.Suspect, "Error", "Error: listen on :8080: address in use"},
		{"pending after a crash that said why", state.Running, Observed{Pod: PodPending, Bridge: BridgeUnknown, Pods: 1, LastTermination: "Error", Message: "boom"}, false, policy.Suspect, "Error", "pending after Error: boom"},
		{"failed without a reason", state.Running, Observed{Pod: PodFailed, Bridge: BridgeDown}, false, policy.Dead, ReasonFailed, "failed"},
		{"bridge down", state.Running, Observed{Pod: PodRunning, Bridge: BridgeDown, Pods: 1}, false, policy.Suspect, ReasonBridgeNotAnswer, "bridge not answering"},
		{"bridge refused by the proxy", state.Running, Observed{Pod: PodRunning, Bridge: BridgeDown, Pods: 1, BridgeProblem: ReasonBridgeRefused}, false, policy.Suspect, ReasonBridgeRefused, "the way to the bridge refused the call"},
		// Its container started a moment ago and it does not answer yet:
		// coming up, not down; after a crash, the crash says more.
		{"bridge starting", state.Running, Observed{Pod: PodRunning, Bridge: BridgeUnknown, Pods: 1, BridgeProblem: ReasonBridgeStarting}, false, policy.Suspect, ReasonBridgeStarting, "bridge starting: its container started a moment ago and it does not answer yet"},
		{"bridge starting after a crash", state.Running, Observed{Pod: PodRunning, Bridge: BridgeUnknown, Pods: 1, BridgeProblem: ReasonBridgeStarting, LastTermination: ReasonOOMKilled}, false, policy.Suspect, ReasonOOMKilled, "OOMKilled"},
		{"bridge starting while asleep", state.Paused, Observed{Pod: PodRunning, Bridge: BridgeUnknown, Pods: 1, BridgeProblem: ReasonBridgeStarting}, false, policy.Diverged, ReasonRunsWhileAsleep, "Running while desired Paused"},
		{"bridge unknown", state.Running, Observed{Pod: PodRunning, Bridge: BridgeUnknown, Pods: 1}, false, policy.Suspect, ReasonBridgeUnknown, "bridge state unknown"},
		{"pending", state.Running, Observed{Pod: PodPending, Bridge: BridgeUnknown, Pods: 1}, false, policy.Suspect, ReasonPending, "pending"},
		{"unknown pod", state.Running, Observed{Pod: PodUnknown}, false, policy.Suspect, ReasonUnknown, "runtime state unknown"},
		// Woken while the old pod still goes away (sleep, then wake): not
		// dead, not diverged, waited on.
		{"woken while the old pod terminates", state.Running, Observed{Pod: PodTerminating, Bridge: BridgeDown, Pods: 1}, false, policy.Suspect, ReasonOldPodTerminating, "its old pod is still terminating; a new one starts once it is gone"},
		{"old pod terminating after a crash", state.Running, Observed{Pod: PodTerminating, Bridge: BridgeDown, Pods: 1, LastTermination: ReasonOOMKilled}, false, policy.Suspect, ReasonOldPodTerminating, "its old pod is still terminating; a new one starts once it is gone"},
		{"old pod terminating, breaker open", state.Running, Observed{Pod: PodTerminating, Bridge: BridgeDown, Pods: 1}, true, policy.Error, ReasonBreakerOpen, "circuit breaker open after repeated crashes; run `sporectl reset`"},
		{"two pods", state.Running, Observed{Pod: PodRunning, Bridge: BridgeUnknown, Pods: 2}, false, policy.Diverged, ReasonMultiplePods, "more than one pod or process tree for this spore"},
		{"breaker open beats all", state.Running, up, true, policy.Error, ReasonBreakerOpen, "circuit breaker open after repeated crashes; run `sporectl reset`"},
		{"asleep", state.Paused, Observed{Pod: PodAbsent}, false, policy.Paused, "", ""},
		{"asleep, old failure", state.Paused, Observed{Pod: PodFailed, LastTermination: ReasonExited}, false, policy.Paused, "", ""},
		{"falling asleep", state.Paused, Observed{Pod: PodTerminating, Pods: 1}, false, policy.Paused, ReasonTerminating, "terminating"},
		{"awake while asleep", state.Paused, up, false, policy.Diverged, ReasonRunsWhileAsleep, "Running while desired Paused"},
		{"stopped", state.Stopped, Observed{Pod: PodAbsent}, false, policy.Stopped, "", ""},
		{"pending while stopped", state.Stopped, Observed{Pod: PodPending, Pods: 1}, false, policy.Diverged, ReasonRunsWhileAsleep, "Pending while desired Stopped"},
		{"stopped with open breaker", state.Stopped, Observed{Pod: PodAbsent}, true, policy.Error, ReasonBreakerOpen, "circuit breaker open after repeated crashes; run `sporectl reset`"},
		{"observation failed while asleep", state.Paused, observationFailed(), false, policy.Suspect, ReasonObservationFailed, "observation failed"},
		{"observation failed while stopped", state.Stopped, Observed{Pod: PodUnknown}, false, policy.Suspect, ReasonUnknown, "runtime state unknown"},
		// The bridge answers, but its agent could not start: named, and
		// before the backoff it causes; an asleep spore's old report is
		// never asked.
		{"agent cannot start", state.Running, with(up, func(o *Observed) { o.AgentError = "start: start claude /opt/claude: permission denied" }), false, policy.Suspect, ReasonAgentCannotStart, "the agent cannot start: start: start claude /opt/claude: permission denied"},
		{"agent cannot start, backing off", state.Running, with(up, func(o *Observed) {
			o.Activity, o.AgentError = bridge.StateBackoff, "exited before writing a line: exit status 1"
		}), false, policy.Suspect, ReasonAgentCannotStart, "the agent cannot start: exited before writing a line: exit status 1"},
		{"agent cannot start, and cannot append", state.Running, with(up, func(o *Observed) { o.BridgeProblem, o.AgentError = ReasonBridgeUnhealthy, "x" }), false, policy.Suspect, ReasonBridgeUnhealthy, "the bridge cannot append to its log"},
		{"agent cannot start, breaker open", state.Running, with(up, func(o *Observed) { o.AgentError = "x" }), true, policy.Error, ReasonBreakerOpen, "circuit breaker open after repeated crashes; run `sporectl reset`"},
		{"agent blocked is no start failure", state.Running, with(up, func(o *Observed) { o.Activity = bridge.StateBlocked }), false, policy.Blocked, ReasonAgentBlocked, "the agent waits for a person"},
		{"bridge cannot append", state.Running, with(up, func(o *Observed) { o.BridgeProblem = ReasonBridgeUnhealthy }), false, policy.Suspect, ReasonBridgeUnhealthy, "the bridge cannot append to its log"},
		// Once OOMKilled, now unable to append: the old termination reason
		// must not hide the bridge's problem (it did when one string was
		// both the reason shown and the flag decided on).
		{"old OOM and cannot append", state.Running, with(up, func(o *Observed) { o.LastTermination, o.BridgeProblem = ReasonOOMKilled, ReasonBridgeUnhealthy }), false, policy.Suspect, ReasonBridgeUnhealthy, "the bridge cannot append to its log"},
		{"back after OOM, bridge not up yet", state.Running, Observed{Pod: PodRunning, Bridge: BridgeDown, Pods: 1, LastTermination: ReasonOOMKilled}, false, policy.Suspect, ReasonOOMKilled, "OOMKilled"},
		{"old OOM, running fine", state.Running, with(up, func(o *Observed) { o.LastTermination = ReasonOOMKilled }), false, policy.Healthy, "", ""},
		{"agent keeps dying", state.Running, with(up, func(o *Observed) { o.Activity = bridge.StateBackoff }), false, policy.Suspect, ReasonAgentBackoff, "the agent keeps dying; the bridge is backing off"},
		{"ingest gap", state.Running, with(up, func(o *Observed) { o.Ingest = ReasonIngestGap }), false, policy.Suspect, ReasonIngestGap, "the bridge's line numbers do not follow on from the store's"},
		{"a page that broke the contract", state.Running, with(up, func(o *Observed) { o.Ingest = ReasonContractBreach }), false, policy.Suspect, ReasonContractBreach, "the bridge broke its contract: nothing from the breach on is ingested"},
		{"over the ingest quota", state.Running, with(up, func(o *Observed) { o.Ingest = ReasonIngestQuota }), false, policy.Suspect, ReasonIngestQuota, "it stored its daily quota of bytes: nothing more is stored today"},
		{"a status that broke the contract", state.Running, Observed{Pod: PodRunning, Bridge: BridgeDown, Pods: 1, BridgeProblem: ReasonContractBreach, Breach: "GET /v1/status: a state of 9 bytes", LastTermination: ReasonExited}, false, policy.Suspect, ReasonContractBreach, "the bridge broke its contract: GET /v1/status: a state of 9 bytes"},
		{"bridge log lost", state.Running, with(up, func(o *Observed) { o.Ingest = ReasonBridgeLogLost }), false, policy.Suspect, ReasonBridgeLogLost, "the bridge's log is behind the store's: its home lost lines the store keeps"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Health(c.desired, c.obs, c.breaker)
			want := Verdict{Effective: c.want, Code: c.code, Text: c.text}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("verdict (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExitMessage(t *testing.T) {
	cases := []struct{ tail, want string }{
		{"", ""},
		{"level=WARN msg=x\n", ""},
		{"error: no claude executable: use --agent echo\nRun 'sporectl --help' for usage.\n", "no claude executable: use --agent echo"},
		{"error: a\x1b[31mb\x07c\n", `a\x1b[31mb\x07c`},
	}
	for _, c := range cases {
		if got := exitMessage(c.tail); got != c.want {
			t.Errorf("exitMessage(%q) = %q, want %q", c.tail, got, c.want)
		}
	}
}
