package colonyspec

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sporectl/sporectl/internal/quote"
	"github.com/sporectl/sporectl/state"
)

// Pod is pod options (state.PodOptions, docs/runtimes.md "Pod options")
// as a file writes them: Kubernetes' own field names. Given, it replaces
// what is stored whole; `pod: {}` removes it.
type Pod struct {
	RuntimeClassName *string           `yaml:"runtimeClassName,omitempty" json:"runtimeClassName,omitempty"`
	NodeSelector     map[string]string `yaml:"nodeSelector,omitempty" json:"nodeSelector,omitempty"`
	Tolerations      []Toleration      `yaml:"tolerations,omitempty" json:"tolerations,omitempty"`
	EnvFromSecrets   []string          `yaml:"envFromSecrets,omitempty" json:"envFromSecrets,omitempty"`
	Labels           map[string]string `yaml:"labels,omitempty" json:"labels,omitempty"`
	Annotations      map[string]string `yaml:"annotations,omitempty" json:"annotations,omitempty"`
}

// Toleration is one of a pod's tolerations, as core/v1 names its fields.
type Toleration struct {
	Key               string `yaml:"key,omitempty" json:"key,omitempty"`
	Operator          string `yaml:"operator,omitempty" json:"operator,omitempty"`
	Value             string `yaml:"value,omitempty" json:"value,omitempty"`
	Effect            string `yaml:"effect,omitempty" json:"effect,omitempty"`
	TolerationSeconds *int64 `yaml:"tolerationSeconds,omitempty" json:"tolerationSeconds,omitempty"`
}

// options is p as the store keeps it; nil when it sets nothing.
func (p *Pod) options() *state.PodOptions {
	if p == nil {
		return nil
	}
	o := &state.PodOptions{NodeSelector: p.NodeSelector, EnvFromSecrets: p.EnvFromSecrets, Labels: p.Labels, Annotations: p.Annotations}
	if p.RuntimeClassName != nil {
		o.RuntimeClassName = *p.RuntimeClassName
	}
	for _, t := range p.Tolerations {
		o.Tolerations = append(o.Tolerations, state.Toleration(t))
	}
	if o.IsZero() {
		return nil
	}
	m := state.MergePod(o) // shares nothing with the document
	return &m
}

// podOf is the stored o as a file writes it; nil when o sets nothing.
func podOf(o *state.PodOptions) *Pod {
	if o.IsZero() {
		return nil
	}
	p := &Pod{NodeSelector: maps.Clone(o.NodeSelector), EnvFromSecrets: slices.Clone(o.EnvFromSecrets),
		Labels: maps.Clone(o.Labels), Annotations: maps.Clone(o.Annotations)}
	if o.RuntimeClassName != "" {
		p.RuntimeClassName = ptr(o.RuntimeClassName)
	}
	for _, t := range o.Tolerations {
		p.Tolerations = append(p.Tolerations, Toleration(t))
	}
	return p
}

// podFields are state's field names of pod options and the file's.
var podFields = strings.NewReplacer(
	".runtime_class_name", ".runtimeClassName",
	".node_selector", ".nodeSelector",
	".env_from_secrets", ".envFromSecrets",
	".toleration_seconds", ".tolerationSeconds",
)

// validatePod checks p at path ("spec.pod", "spec.spores[2].pod") by
// state's rules, the error at the file's name of the field that breaks
// one (`spec.pod.labels["tier"]`).
func (d *Document) validatePod(path string, p *Pod) []error {
	if p == nil {
		return nil
	}
	if p.RuntimeClassName != nil && *p.RuntimeClassName == "" {
		return []error{d.errorAt(path+".runtimeClassName", "is empty: give a RuntimeClass's name, or leave the field out")}
	}
	err := p.options().Validate(path)
	var inv *state.InvalidError
	if errors.As(err, &inv) {
		field := podFields.Replace(inv.Field)
		return []error{d.errorAt(field, "invalid value %s: %s", quote.Value(inv.Value), inv.Reason)}
	}
	if err != nil {
		return []error{d.errorAt(path, "%s", err.Error())}
	}
	return nil
}

// checkSecrets refuses each Secret p (at path) names that the operator
// did not list in the store's pod_secrets (state.Settings.CheckPodSecrets),
// at the file's line of the name.
func (d *Document) checkSecrets(path string, p *Pod, settings state.Settings) []error {
	if p == nil {
		return nil
	}
	var errs []error
	for i, name := range p.EnvFromSecrets {
		if settings.CheckPodSecrets("", &state.PodOptions{EnvFromSecrets: []string{name}}) != nil {
			errs = append(errs, d.errorAt(fmt.Sprintf("%s.envFromSecrets[%d]", path, i),
				"Secret %s is not one the operator allows pods to name; add it to %s", quote.Value(name), state.PodSecretsSetting))
		}
	}
	return errs
}
