package storetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// testPodOptions: a spore's pod options and the store's default ones are
// kept exactly, cleared back to none, and bad ones (a key sporectl sets
// itself, a bad runtime class) are refused with nothing written.
func testPodOptions(t *testing.T, s state.Store) {
	ctx := t.Context()
	five := int64(5)
	pod := &state.PodOptions{
		RuntimeClassName: "gvisor",
		NodeSelector:     map[string]string{"kubernetes.io/arch": "amd64", "pool": ""},
		Tolerations: []state.Toleration{
			{Key: "sandbox", Operator: "Equal", Value: "gvisor", Effect: "NoSchedule"},
			{Key: "flaky", Operator: "Exists", Effect: "NoExecute", TolerationSeconds: &five},
			{Operator: "Exists"},
		},
		EnvFromSecrets: []string{"team-keys", "model.v2"},
		Labels:         map[string]string{"team": "moss", "example.com/tier": "a"},
		Annotations:    map[string]string{"example.com/note": "ünïcode \"quoted\"\n\tand a tab"},
	}
	sp := Spore("one")
	sp.Spec.Pod = pod
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, sp) }))
	get := func() state.Spore { return spore(t, s, "one") }
	require.Equal(t, pod, get().Spec.Pod)
	spores := view(t, s, func(ctx context.Context, tx state.Tx) ([]state.Spore, error) { return tx.Spores(ctx) })
	require.Equal(t, pod, spores[0].Spec.Pod)

	require.NoError(t, update(ctx, s, "one", func(sp *state.Spore) { sp.Spec.Pod = nil }))
	require.Nil(t, get().Spec.Pod)
	require.NoError(t, update(ctx, s, "one", func(sp *state.Spore) { sp.Spec.Pod = &state.PodOptions{Labels: map[string]string{"a": "b"}} }))
	require.Equal(t, &state.PodOptions{Labels: map[string]string{"a": "b"}}, get().Spec.Pod)

	for name, bad := range map[string]*state.PodOptions{
		"reserved label": {Labels: map[string]string{"sporectl.dev/spore": "two"}},
		"runtime class":  {RuntimeClassName: "Kata"},
		"spore's secret": {EnvFromSecrets: []string{"spore-two"}},
	} {
		err := update(ctx, s, "one", func(sp *state.Spore) { sp.Spec.Pod = bad })
		var inv *state.InvalidError
		require.ErrorAs(t, err, &inv, name)
		require.Equal(t, &state.PodOptions{Labels: map[string]string{"a": "b"}}, get().Spec.Pod, name)
		two := Spore("two")
		two.Spec.Pod = bad
		err = s.Update(ctx, func(tx state.Tx) error { return tx.CreateSpore(ctx, two) })
		require.ErrorAs(t, err, &inv, name)
	}

	settings := view(t, s, func(ctx context.Context, tx state.Tx) (state.Settings, error) { return tx.Settings(ctx) })
	settings.DefaultSpec.Pod = pod
	// Its Secrets are not on the operator's list (pod_secrets) yet.
	var unlisted *state.InvalidError
	require.ErrorAs(t, s.Update(ctx, func(tx state.Tx) error { return tx.PutSettings(ctx, settings) }), &unlisted)
	require.Equal(t, "default_spec.pod.env_from_secrets[0]", unlisted.Field)
	settings = settings.WithPodSecrets(pod.EnvFromSecrets)
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error { return tx.PutSettings(ctx, settings) }))
	got := view(t, s, func(ctx context.Context, tx state.Tx) (state.Settings, error) { return tx.Settings(ctx) })
	require.Equal(t, pod, got.DefaultSpec.Pod)
	require.Equal(t, pod.EnvFromSecrets, got.PodSecrets(), "the list is kept")
	settings.DefaultSpec.Pod = &state.PodOptions{Annotations: map[string]string{"sporectl.dev/owner": "me"}}
	err := s.Update(ctx, func(tx state.Tx) error { return tx.PutSettings(ctx, settings) })
	var inv *state.InvalidError
	require.ErrorAs(t, err, &inv)
	require.Equal(t, `default_spec.pod.annotations["sporectl.dev/owner"]`, inv.Field)
	got = view(t, s, func(ctx context.Context, tx state.Tx) (state.Settings, error) { return tx.Settings(ctx) })
	require.Equal(t, pod, got.DefaultSpec.Pod)
}
