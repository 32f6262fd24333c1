package state

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A pod option may name only a Secret the operator listed in pod_secrets;
// the spores' own and sporectl's cannot be listed.
func TestPodSecretsAreAnAllowlist(t *testing.T) {
	team := &PodOptions{EnvFromSecrets: []string{"team-key"}}
	tests := []struct {
		name string
		s    Settings
		want string // "" valid; else the error
	}{
		{"nothing named, nothing listed", Settings{}, ""},
		{"a default Secret not listed", Settings{DefaultSpec: Spec{Pod: team}},
			`invalid default_spec.pod.env_from_secrets[0] "team-key": is not a Secret the operator allows pods to name; add it to ` + PodSecretsSetting},
		{"a colony's Secret not listed", Settings{}.WithColony("lab", ColonySettings{Pod: team}).WithPodSecrets([]string{"other"}),
			`invalid colonies.lab.pod.env_from_secrets[0] "team-key": is not a Secret the operator allows pods to name; add it to ` + PodSecretsSetting},
		{"listed", Settings{DefaultSpec: Spec{Pod: team}}.WithColony("lab", ColonySettings{Pod: team}).WithPodSecrets([]string{"team-key"}), ""},
		{"a spore's own Secret listed", Settings{}.WithPodSecrets([]string{"spore-a"}),
			`invalid pod_secrets[0] "spore-a": names a spore's own Secret (spore-*), which holds its tokens`},
		{"sporectl's Secret listed", Settings{}.WithPodSecrets([]string{"ok", "sporectl-store"}),
			`invalid pod_secrets[1] "sporectl-store": names one of sporectl's Secrets (sporectl-*: the model's, which every pod gets already, and the store's credentials)`},
		{"listed twice", Settings{}.WithPodSecrets([]string{"a", "a"}), `invalid pod_secrets[1] "a": is named twice`},
		{"not a name", Settings{}.WithPodSecrets([]string{"Team Key"}), `invalid pod_secrets[0] "Team Key"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.s.Validate()
			if tt.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.want)
		})
	}
	s := Settings{}.WithPodSecrets([]string{"team-key"})
	require.NoError(t, s.CheckPodSecrets("spec.pod", team))
	require.EqualError(t, Settings{}.CheckPodSecrets("--env-from-secret", team),
		`invalid --env-from-secret "team-key": is not a Secret the operator allows pods to name; add it to `+PodSecretsSetting)
	require.Nil(t, Settings{}.WithPodSecrets(nil).AllowedSecrets, "an empty list removes the key")
}
