package state

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sporectl/sporectl/internal/quote"
	"github.com/sporectl/sporectl/kube/podgrammar"
)

// PodOptions are what an operator adds to a spore's pod on Kubernetes
// (docs/runtimes.md "Pod options"): the runtime class (a sandbox such as
// gVisor or Kata), where it may be scheduled, Secrets whose keys become its
// environment, and labels and annotations of its own. The local runtime
// ignores them.
//
// State keeps the values and checks them (Validate) on every write and
// read of a record, so a bad value is refused with the field that holds it
// before anything is written; whether a runtime class or Secret exists is
// the cluster's to say when the pod is made. The grammar is Kubernetes',
// and the kube runtime's: kube/podgrammar, a package beside the runtime
// that imports nothing of this module, so state calls it without
// importing the runtime (which translates these values and imports
// state). State keeps its own bounds (sizes, counts) and the rules of an
// annotation's text, which are how a record is printed, not Kubernetes'.
type PodOptions struct {
	// RuntimeClassName is the pod's runtimeClassName: a DNS-1123
	// subdomain naming a RuntimeClass of the cluster.
	RuntimeClassName string `json:"runtime_class_name,omitempty"`
	// NodeSelector is the pod's nodeSelector: node label keys and values.
	NodeSelector map[string]string `json:"node_selector,omitempty"`
	// Tolerations are the pod's tolerations.
	Tolerations []Toleration `json:"tolerations,omitempty"`
	// EnvFromSecrets name Secrets in the runtime's namespace whose keys
	// become the bridge container's environment, after the model's Secret
	// (a later one wins a key both hold; the variables sporectl sets win
	// over all of them).
	EnvFromSecrets []string `json:"env_from_secrets,omitempty"`
	// Labels and Annotations go on the pod (only the pod). Keys that
	// sporectl sets itself are refused (kube/podgrammar.Reserved).
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// Toleration mirrors the fields of Kubernetes' core/v1 Toleration.
type Toleration struct {
	Key string `json:"key,omitempty"`
	// Operator is Exists or Equal; empty means Equal, as in Kubernetes.
	Operator string `json:"operator,omitempty"`
	Value    string `json:"value,omitempty"`
	// Effect is NoSchedule, PreferNoSchedule or NoExecute; empty
	// tolerates every effect.
	Effect string `json:"effect,omitempty"`
	// TolerationSeconds, for NoExecute only, is how long the pod stays on
	// a node after the taint appears (nil: forever).
	TolerationSeconds *int64 `json:"toleration_seconds,omitempty"`
}

// Toleration operators and taint effects (kube/podgrammar's).
const (
	TolerationExists = podgrammar.TolerationExists
	TolerationEqual  = podgrammar.TolerationEqual

	EffectNoSchedule       = podgrammar.EffectNoSchedule
	EffectPreferNoSchedule = podgrammar.EffectPreferNoSchedule
	EffectNoExecute        = podgrammar.EffectNoExecute
)

// Bounds of PodOptions. Kubernetes has its own (256 KiB for all of an
// object's annotations); these keep a record small and a mistake visible.
const (
	MaxPodMapEntries   = 64   // entries of labels, of annotations, of the node selector
	MaxTolerations     = 32   // tolerations
	MaxEnvFromSecrets  = 16   // Secrets for the environment
	MaxAnnotationValue = 4096 // bytes of one annotation's value
)

// IsZero reports whether p sets nothing.
func (p *PodOptions) IsZero() bool {
	return p == nil || p.RuntimeClassName == "" && len(p.NodeSelector) == 0 && len(p.Tolerations) == 0 &&
		len(p.EnvFromSecrets) == 0 && len(p.Labels) == 0 && len(p.Annotations) == 0
}

// Equal reports whether p and o set the same options; nil and an empty
// set are the same, as are a nil and an empty map or list.
func (p *PodOptions) Equal(o *PodOptions) bool {
	if p.IsZero() || o.IsZero() {
		return p.IsZero() == o.IsZero()
	}
	return p.RuntimeClassName == o.RuntimeClassName && maps.Equal(p.NodeSelector, o.NodeSelector) &&
		maps.Equal(p.Labels, o.Labels) && maps.Equal(p.Annotations, o.Annotations) &&
		slices.Equal(p.EnvFromSecrets, o.EnvFromSecrets) &&
		slices.EqualFunc(p.Tolerations, o.Tolerations, func(a, b Toleration) bool {
			return a.Key == b.Key && a.Operator == b.Operator && a.Value == b.Value && a.Effect == b.Effect &&
				(a.TolerationSeconds == nil) == (b.TolerationSeconds == nil) &&
				(a.TolerationSeconds == nil || *a.TolerationSeconds == *b.TolerationSeconds)
		})
}

// Summary is p in a few words, as an event or a diff says it: "runtime
// class gvisor, 1 toleration, 2 labels"; "none" when p sets nothing.
// Values other than the runtime class are counted, not printed: an
// annotation may be long.
func (p *PodOptions) Summary() string {
	if p.IsZero() {
		return "none"
	}
	var parts []string
	if p.RuntimeClassName != "" {
		parts = append(parts, "runtime class "+p.RuntimeClassName)
	}
	count := func(n int, one, many string) {
		switch {
		case n == 1:
			parts = append(parts, "1 "+one)
		case n > 1:
			parts = append(parts, strconv.Itoa(n)+" "+many)
		}
	}
	count(len(p.NodeSelector), "node selector", "node selectors")
	count(len(p.Tolerations), "toleration", "tolerations")
	count(len(p.EnvFromSecrets), "Secret", "Secrets")
	count(len(p.Labels), "label", "labels")
	count(len(p.Annotations), "annotation", "annotations")
	return strings.Join(parts, ", ")
}

// MergePod merges layers of pod options, the most general first (the
// store's default, then the colony's, then the spore's): a later layer's runtime class wins when set; maps
// are merged key by key, a later layer's value winning; a list a later
// layer sets (tolerations, Secrets) replaces the earlier one whole. Nil
// layers are skipped. The result shares nothing with the layers.
func MergePod(layers ...*PodOptions) PodOptions {
	var out PodOptions
	merge := func(dst *map[string]string, src map[string]string) {
		if len(src) == 0 {
			return
		}
		if *dst == nil {
			*dst = make(map[string]string, len(src))
		}
		maps.Copy(*dst, src)
	}
	for _, l := range layers {
		if l == nil {
			continue
		}
		if l.RuntimeClassName != "" {
			out.RuntimeClassName = l.RuntimeClassName
		}
		merge(&out.NodeSelector, l.NodeSelector)
		merge(&out.Labels, l.Labels)
		merge(&out.Annotations, l.Annotations)
		if len(l.Tolerations) > 0 {
			out.Tolerations = make([]Toleration, len(l.Tolerations))
			for i, t := range l.Tolerations {
				if t.TolerationSeconds != nil {
					s := *t.TolerationSeconds
					t.TolerationSeconds = &s
				}
				out.Tolerations[i] = t
			}
		}
		if len(l.EnvFromSecrets) > 0 {
			out.EnvFromSecrets = slices.Clone(l.EnvFromSecrets)
		}
	}
	return out
}

// Validate checks p: its bounds, and each value by Kubernetes' grammar
// (kube/podgrammar). field is where p sits ("spec.pod"); every error is
// an *InvalidError whose Field names the value within it
// (`spec.pod.labels["tier"]`, `spec.pod.tolerations[0].effect`). A nil p
// is valid.
func (p *PodOptions) Validate(field string) error {
	if p == nil {
		return nil
	}
	if p.RuntimeClassName != "" {
		if r := podgrammar.DNSSubdomain(p.RuntimeClassName); r != "" {
			return &InvalidError{Field: field + ".runtime_class_name", Value: p.RuntimeClassName, Reason: r}
		}
	}
	if err := validateLabels(field+".node_selector", p.NodeSelector, false); err != nil {
		return err
	}
	if err := validateLabels(field+".labels", p.Labels, true); err != nil {
		return err
	}
	if err := validateAnnotations(field+".annotations", p.Annotations); err != nil {
		return err
	}
	if len(p.Tolerations) > MaxTolerations {
		return &InvalidError{Field: field + ".tolerations", Value: strconv.Itoa(len(p.Tolerations)), Reason: fmt.Sprintf("at most %d are allowed", MaxTolerations)}
	}
	for i, t := range p.Tolerations {
		if f, v, r := t.check(); f != "" {
			return &InvalidError{Field: fmt.Sprintf("%s.tolerations[%d].%s", field, i, f), Value: v, Reason: r}
		}
	}
	if len(p.EnvFromSecrets) > MaxEnvFromSecrets {
		return &InvalidError{Field: field + ".env_from_secrets", Value: strconv.Itoa(len(p.EnvFromSecrets)), Reason: fmt.Sprintf("at most %d are allowed", MaxEnvFromSecrets)}
	}
	for i, name := range p.EnvFromSecrets {
		f := func() string { return fmt.Sprintf("%s.env_from_secrets[%d]", field, i) }
		if r := podgrammar.SecretName(name); r != "" {
			return &InvalidError{Field: f(), Value: name, Reason: r}
		}
		if slices.Index(p.EnvFromSecrets, name) < i {
			return &InvalidError{Field: f(), Value: name, Reason: "is named twice"}
		}
	}
	return nil
}

// Validate checks one toleration by Kubernetes' rules
// (podgrammar.Toleration); field is where it sits ("toleration").
func (t Toleration) Validate(field string) error {
	if f, v, r := t.check(); f != "" {
		return &InvalidError{Field: field + "." + f, Value: v, Reason: r}
	}
	return nil
}

// check is podgrammar.Toleration of t: the field at fault relative to the
// toleration ("effect"), so a valid one costs no field name.
func (t Toleration) check() (field, value, reason string) {
	return podgrammar.Toleration(t.Key, t.Operator, t.Value, t.Effect, t.TolerationSeconds)
}

func validateLabels(field string, m map[string]string, refuseReserved bool) error {
	if len(m) > MaxPodMapEntries {
		return &InvalidError{Field: field, Value: strconv.Itoa(len(m)), Reason: fmt.Sprintf("at most %d entries are allowed", MaxPodMapEntries)}
	}
	for _, k := range sortedKeys(m) {
		if r := podgrammar.LabelKey(k); r != "" {
			return &InvalidError{Field: entryField(field, k), Value: k, Reason: r}
		}
		if refuseReserved && podgrammar.Reserved(k) {
			return &InvalidError{Field: entryField(field, k), Value: k, Reason: podgrammar.ReservedReason}
		}
		if r := podgrammar.LabelValue(m[k]); r != "" {
			return &InvalidError{Field: entryField(field, k), Value: m[k], Reason: r}
		}
	}
	return nil
}

func validateAnnotations(field string, m map[string]string) error {
	if len(m) > MaxPodMapEntries {
		return &InvalidError{Field: field, Value: strconv.Itoa(len(m)), Reason: fmt.Sprintf("at most %d entries are allowed", MaxPodMapEntries)}
	}
	for _, k := range sortedKeys(m) {
		if r := podgrammar.LabelKey(k); r != "" {
			return &InvalidError{Field: entryField(field, k), Value: k, Reason: r}
		}
		if podgrammar.Reserved(k) {
			return &InvalidError{Field: entryField(field, k), Value: k, Reason: podgrammar.ReservedReason}
		}
		if err := ValidateAnnotationValue(entryField(field, k), m[k]); err != nil {
			return err
		}
	}
	return nil
}

// sortedKeys makes the first bad entry the same one on every run; most
// maps are a few entries, and an empty one allocates nothing.
func sortedKeys(m map[string]string) []string {
	if len(m) == 0 {
		return nil
	}
	return slices.Sorted(maps.Keys(m))
}

// entryField names one entry of a map field: `spec.pod.labels["tier"]`.
func entryField(field, k string) string { return field + "[" + quote.Value(k) + "]" }

// ValidateAnnotationValue checks an annotation value: any UTF-8 text up
// to MaxAnnotationValue bytes, with no control character but newline and
// tab (a record is printed on terminals). Kubernetes takes any string:
// these are state's rules, for the record.
func ValidateAnnotationValue(field, v string) error {
	if len(v) > MaxAnnotationValue {
		return &InvalidError{Field: field, Value: v, Reason: fmt.Sprintf("value is %d bytes; at most %d", len(v), MaxAnnotationValue)}
	}
	if !utf8.ValidString(v) {
		return &InvalidError{Field: field, Value: "(binary)", Reason: "value is not valid UTF-8"}
	}
	for _, r := range v {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f {
			return &InvalidError{Field: field, Value: v, Reason: "value contains a control character (only newline and tab are allowed)"}
		}
	}
	return nil
}
