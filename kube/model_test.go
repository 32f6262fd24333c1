package kube_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/sporectl/sporectl/bridge/sporeenv"
	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/kube/podgrammar"
	"github.com/sporectl/sporectl/state"
)

// TestPodBehindTheGatewayHasNoModelSecret: with the store's gateway on
// (the default), a spore pod gets the gateway's URL and not the model's
// Secret, whatever its pod options; off, today's pod: the Secret, no
// gateway URL.
func TestPodBehindTheGatewayHasNoModelSecret(t *testing.T) {
	envOf := func(c corev1.Container, name string) (string, bool) {
		for _, e := range c.Env {
			if e.Name == name {
				return e.Value, true
			}
		}
		return "", false
	}
	secrets := func(c corev1.Container) []string {
		var names []string
		for _, ef := range c.EnvFrom {
			if ef.SecretRef != nil {
				names = append(names, ef.SecretRef.Name)
			}
		}
		return names
	}
	s := spore("gw")
	s.Spec.Pod = &state.PodOptions{EnvFromSecrets: []string{"git-creds"}}
	for _, tc := range []struct {
		name        string
		settings    state.Settings
		apiURL      string
		wantURL     string
		wantSecrets []string
	}{
		{name: "default settings: gateway", settings: state.Settings{},
			wantURL: "http://sporectl-api.sporectl.svc/model", wantSecrets: []string{"git-creds"}},
		{name: "gateway on, the store's api-url", settings: state.Settings{ModelGateway: state.GatewayOn, APIURL: "https://serve.example:8443/"},
			wantURL: "https://serve.example:8443/model", wantSecrets: []string{"git-creds"}},
		{name: "direct", settings: state.Settings{ModelGateway: state.GatewayOff},
			wantSecrets: []string{kube.ModelSecret, "git-creds"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := kube.OptionsFromSettings(tc.settings, kube.Cluster{Namespace: "sporectl"})
			require.Equal(t, tc.settings.Gateway(), o.Gateway)
			pod, err := o.PodFor(s, "")
			require.NoError(t, err)
			c := pod.Spec.Containers[0]
			assert.Equal(t, tc.wantSecrets, secrets(c))
			url, ok := envOf(c, sporeenv.ModelURL)
			assert.Equal(t, tc.wantURL != "", ok, "%s set only behind the gateway", sporeenv.ModelURL)
			assert.Equal(t, tc.wantURL, url)
			for _, e := range c.Env {
				assert.NotContains(t, e.Name, "ANTHROPIC_", "sporectl sets no model variable of its own")
			}
			for _, ef := range c.EnvFrom {
				if ef.SecretRef != nil && ef.SecretRef.Name == kube.ModelSecret {
					require.NotNil(t, ef.SecretRef.Optional)
					assert.True(t, *ef.SecretRef.Optional, "direct mode: a pod starts without it (the echo agent needs no key)")
				}
			}
		})
	}
	// And pod options cannot bring it back behind the gateway.
	assert.NotEmpty(t, podgrammar.SecretName(kube.ModelSecret))
}
