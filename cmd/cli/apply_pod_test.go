package cli

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

const podColony = `apiVersion: sporectl/v1
kind: Colony
metadata: {name: lab}
spec:
  budget: {tokensPerDay: 50000, costPerDay: "5"}
  pod:
    runtimeClassName: gvisor
    tolerations: [{key: agents, operator: Exists, effect: NoSchedule}]
  spores:
  - id: red-1
    pod:
      nodeSelector: {pool: agents}
      envFromSecrets: [red-keys]
      labels: {team: red}
  - id: red-2
`

// apply sets a colony's pod options and budget and a spore's own pod
// options, on both stores, in the one transaction; the same file again
// and its export write nothing; a change of them is a new generation
// with an event that says what changed.
func TestApplyPodOptionsAndColonyBudget(t *testing.T) {
	eachStore(t, func(t *testing.T, r *applyRig) {
		// A Secret the operator has not listed is refused where the file
		// names it; listed (init --pod-secret), it is applied.
		refused := r.run("", "apply", "-f", r.file("lab.yaml", podColony))
		require.Equal(t, ExitUsage, refused.code, refused.err)
		require.Contains(t, refused.err, `lab.yaml:13: spec.spores[0].pod.envFromSecrets[0]: Secret "red-keys" is not one the operator allows pods to name; add it to the store's setting pod_secrets (sporectl init --pod-secret NAME, repeatable)`)
		require.Equal(t, ExitNotFound, r.run("", "events", "red-1").code, "nothing applied")
		r.ok("", "init", "--pod-secret", "red-keys")

		before := r.writes()
		out := r.ok("", "apply", "-f", r.file("lab.yaml", podColony))
		require.Equal(t, "colony/lab configured\nspore/red-1 created\nspore/red-2 created\n", out)
		require.Equal(t, before+1, r.writes(), "one transaction")
		settings := statetest.Read(t, r.st, func(ctx context.Context, tx state.Tx) (state.Settings, error) { return tx.Settings(ctx) })
		lab := settings.Colony("lab")
		require.Equal(t, state.Budget{TokensPerDay: 50000, CostPerDayMicros: 5_000_000}, lab.Budget)
		require.Equal(t, &state.PodOptions{RuntimeClassName: "gvisor", Tolerations: []state.Toleration{{Key: "agents", Operator: "Exists", Effect: "NoSchedule"}}}, lab.Pod)
		red := statetest.Spore(t, r.st, "red-1")
		require.Equal(t, &state.PodOptions{NodeSelector: map[string]string{"pool": "agents"}, EnvFromSecrets: []string{"red-keys"}, Labels: map[string]string{"team": "red"}}, red.Spec.Pod)
		require.Nil(t, statetest.Spore(t, r.st, "red-2").Spec.Pod, "a spore without pod options has none of its own")

		before = r.writes()
		require.Contains(t, r.ok("", "apply", "-f", r.file("lab.yaml", podColony)), "spore/red-1 unchanged")
		exported := r.ok("", "export", "lab")
		require.Contains(t, exported, "runtimeClassName: gvisor")
		require.Contains(t, exported, "envFromSecrets:\n      - red-keys")
		r.ok(exported, "apply", "-f", "-")
		require.Equal(t, before, r.writes(), "the same file and its export write nothing")

		changed := r.file("lab2.yaml", `apiVersion: sporectl/v1
kind: Colony
metadata: {name: lab}
spec:
  pod: {}
  spores:
  - id: red-1
    pod: {runtimeClassName: kata}
`)
		res := r.run("", "diff", "-f", changed)
		require.Equal(t, 1, res.code, "%s", res.err)
		require.Contains(t, res.out, "pod: runtime class gvisor, 1 toleration → none")
		require.Contains(t, res.out, "pod: 1 node selector, 1 Secret, 1 label → runtime class kata")
		r.ok("", "apply", "-f", changed)
		after := statetest.Spore(t, r.st, "red-1")
		require.Equal(t, &state.PodOptions{RuntimeClassName: "kata"}, after.Spec.Pod)
		require.Greater(t, after.Generation, red.Generation)
		settings = statetest.Read(t, r.st, func(ctx context.Context, tx state.Tx) (state.Settings, error) { return tx.Settings(ctx) })
		require.Nil(t, settings.Colony("lab").Pod, "pod: {} removes the colony's")
		require.Equal(t, state.Budget{TokensPerDay: 50000, CostPerDayMicros: 5_000_000}, settings.Colony("lab").Budget, "left out, kept")
		events := r.ok("", "events", "red-1", "-o", "json")
		require.Contains(t, events, "pod options 1 node selector, 1 Secret, 1 label → runtime class kata")
	})
}
