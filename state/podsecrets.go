package state

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/sporectl/sporectl/kube/podgrammar"
)

// SecretList is the operator's list of the Secrets a pod option may name
// (the settings' pod_secrets, docs/security.md "Secrets of a pod"): a
// Secret's keys become a spore's environment, and the agent in it is
// untrusted, so a Secret reaches a pod only if the operator listed it —
// an allowlist, not a list of what is forbidden. The spores' own and
// sporectl's Secrets (kube/podgrammar's SecretName) cannot be listed.
type SecretList []string

// MaxPodSecrets bounds the list.
const MaxPodSecrets = 64

// PodSecretsSetting is the setting's name as errors and docs say it, with
// the flag that changes it.
const PodSecretsSetting = "the store's setting pod_secrets (sporectl init --pod-secret NAME, repeatable)"

// PodSecrets returns the Secrets the operator allows pods to name (nil:
// none).
func (s Settings) PodSecrets() []string {
	if s.AllowedSecrets == nil {
		return nil
	}
	return *s.AllowedSecrets
}

// WithPodSecrets returns s with names as the Secrets pods may name; an
// empty list removes the key (no Secret allowed).
func (s Settings) WithPodSecrets(names []string) Settings {
	if len(names) == 0 {
		s.AllowedSecrets = nil
		return s
	}
	l := SecretList(slices.Clone(names))
	s.AllowedSecrets = &l
	return s
}

// validatePodSecrets checks the list itself, then that the store's
// default pod options and every colony's name only Secrets on it.
func (s Settings) validatePodSecrets() error {
	names := s.PodSecrets()
	if len(names) > MaxPodSecrets {
		return &InvalidError{Field: "pod_secrets", Value: strconv.Itoa(len(names)), Reason: fmt.Sprintf("at most %d are allowed", MaxPodSecrets)}
	}
	for i, n := range names {
		f := fmt.Sprintf("pod_secrets[%d]", i)
		if r := podgrammar.SecretName(n); r != "" {
			return &InvalidError{Field: f, Value: n, Reason: r}
		}
		if slices.Index(names, n) < i {
			return &InvalidError{Field: f, Value: n, Reason: "is named twice"}
		}
	}
	if err := s.CheckPodSecrets("default_spec.pod", s.DefaultSpec.Pod); err != nil {
		return err
	}
	if s.Colonies != nil {
		for _, name := range slices.Sorted(maps.Keys(*s.Colonies)) {
			if err := s.CheckPodSecrets("colonies."+name+".pod", (*s.Colonies)[name].Pod); err != nil {
				return err
			}
		}
	}
	return nil
}

// CheckPodSecrets refuses pod options at field ("spec.pod", a flag) that
// name a Secret the operator did not list, naming the entry and the
// setting to change. The runtimes never read a Secret; this is what
// decides which ones a spore may be handed.
func (s Settings) CheckPodSecrets(field string, p *PodOptions) error {
	if p == nil {
		return nil
	}
	allowed := s.PodSecrets()
	for i, name := range p.EnvFromSecrets {
		if !slices.Contains(allowed, name) {
			f := field
			if len(field) == 0 || field[0] != '-' {
				f = fmt.Sprintf("%s.env_from_secrets[%d]", field, i)
			}
			return &InvalidError{Field: f, Value: name, Reason: "is not a Secret the operator allows pods to name; add it to " + PodSecretsSetting}
		}
	}
	return nil
}
