package kube_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/state"
)

// A spore's pod carries its colony's egress setting, which the
// spores-internet NetworkPolicy selects on: "none" for a colony set so,
// "all" for every other (the default, or a colony the settings do not
// name). Its claim and Secret do not carry it: they send no packet, and a
// label there would only go stale.
func TestSporePodCarriesItsColonysEgress(t *testing.T) {
	s := state.Settings{}.
		WithColony("moss", state.ColonySettings{Egress: state.EgressNone}).
		WithColony("lichen", state.ColonySettings{Egress: state.EgressAll}).
		WithColony("fern", state.ColonySettings{WakeOnMessage: true})
	o := kube.OptionsFromSettings(s, kube.Cluster{})
	assert.Equal(t, map[string]string{"moss": state.EgressNone, "lichen": state.EgressAll}, o.ColonyEgress)
	for _, tc := range []struct{ colony, want string }{
		{"moss", "none"}, {"lichen", "all"}, {"fern", "all"}, {"unnamed", "all"},
	} {
		sp := spore("x")
		sp.Colony = tc.colony
		pod, err := o.PodFor(sp, "")
		require.NoError(t, err)
		assert.Equal(t, tc.want, pod.Labels[kube.LabelEgress], "colony %s", tc.colony)
		claim, err := o.ClaimFor(sp)
		require.NoError(t, err)
		assert.NotContains(t, claim.Labels, kube.LabelEgress)
	}
}

// An operator's pod options cannot label a pod out of the policy: the
// egress label's key is one sporectl sets itself.
func TestPodOptionsCannotSetTheEgressLabel(t *testing.T) {
	p := &state.PodOptions{Labels: map[string]string{kube.LabelEgress: state.EgressAll}}
	err := p.Validate("colonies.moss.pod")
	require.Error(t, err)
	assert.Contains(t, err.Error(), kube.LabelEgress)
}
