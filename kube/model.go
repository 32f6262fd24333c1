package kube

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/sporectl/sporectl/bridge/sporeenv"
)

// How a spore pod reaches the model (docs/security.md "Secrets"). Behind
// the gateway the model's key lives in serve's Deployment alone
// (kube/deploy/serve.yaml mounts ModelSecret there): a spore pod is told
// where the gateway is, and its bridge gives its agent the spore's own
// id and token as the key. In direct mode every spore pod gets the
// ModelSecret's keys as environment variables, where its agent can read
// them.

// modelEnvFrom is the ModelSecret in direct mode, nothing behind the
// gateway.
func (o Options) modelEnvFrom() []corev1.EnvFromSource {
	if o.Gateway {
		return nil
	}
	optional := true
	return []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: ModelSecret},
		Optional:             &optional,
	}}}
}

// modelEnv is the gateway's URL behind the gateway (the API URL and
// sporeenv.ModelPath), nothing in direct mode.
func (o Options) modelEnv() []corev1.EnvVar {
	if !o.Gateway {
		return nil
	}
	return []corev1.EnvVar{{Name: sporeenv.ModelURL, Value: o.modelURL()}}
}

func (o Options) modelURL() string {
	return strings.TrimSuffix(o.apiURL(), "/") + sporeenv.ModelPath
}
