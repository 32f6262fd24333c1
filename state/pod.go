package state

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/sporectl/sporectl/internal/quote"
)

// PodOptions are what an operator adds to a spore's pod on Kubernetes
// (docs/runtimes.md "Pod options"): the runtime class (a sandbox such as
// gVisor or Kata), where it may be scheduled, Secrets whose keys become its
// environment, and labels and annotations of its own. The local runtime
// ignores them.
//
// State checks their grammar only, by Kubernetes' rules, so a bad value is
// refused with the field that holds it before anything is written; whether
// a runtime class or Secret exists is the cluster's to say when the pod is
// made. State does not import Kubernetes: the kube runtime translates
// these, and its tests check this grammar against the API server's.
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
	// sporectl sets itself are refused (ReservedKey).
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

// Toleration operators and taint effects.
const (
	TolerationExists = "Exists"
	TolerationEqual  = "Equal"

	EffectNoSchedule       = "NoSchedule"
	EffectPreferNoSchedule = "PreferNoSchedule"
	EffectNoExecute        = "NoExecute"
)

// Bounds of PodOptions. Kubernetes has its own (256 KiB for all of an
// object's annotations); these keep a record small and a mistake visible.
const (
	MaxPodMapEntries   = 64   // entries of labels, of annotations, of the node selector
	MaxTolerations     = 32   // tolerations
	MaxEnvFromSecrets  = 16   // Secrets for the environment
	MaxAnnotationValue = 4096 // bytes of one annotation's value

	// Kubernetes' own limits.
	maxLabelValue        = 63  // a label value
	maxQualifiedNameName = 63  // a key's name, after its prefix
	maxDNSSubdomain      = 253 // a DNS-1123 subdomain
)

// Secrets a pod option may not name: the spores' own ("spore-ID", which
// hold their tokens: a spore would be handed another's) and sporectl's
// ("sporectl-model", which every pod gets already, and "sporectl-store",
// which holds the store's URL and credentials: a spore reaches the store
// only through serve).
const (
	SporeSecretPrefix    = "spore-"
	SporectlSecretPrefix = "sporectl-"
)

// ReservedPrefix and the app.kubernetes.io keys below are the label and
// annotation keys sporectl sets: on a spore's objects, where they tell it
// what it owns (kube/labels.go), and on its own workloads (kube/deploy),
// whose NetworkPolicies select on them. A pod option may not set them:
// letting one through would hand the pod to someone else, or another
// spore's pod to sporectl, or give a spore the network reach of serve
// (app.kubernetes.io/name=sporectl may reach every bridge).
const ReservedPrefix = "sporectl.dev/"

var reservedKeys = []string{"app.kubernetes.io/managed-by", "app.kubernetes.io/component", "app.kubernetes.io/name"}

// ReservedKey reports whether k is a label or annotation key that
// sporectl sets itself.
func ReservedKey(k string) bool {
	return strings.HasPrefix(k, ReservedPrefix) || slices.Contains(reservedKeys, k)
}

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

// Validate checks p's grammar. field is where p sits ("spec.pod"); every
// error is an *InvalidError whose Field names the value within it
// (`spec.pod.labels["tier"]`, `spec.pod.tolerations[0].effect`). A nil p
// is valid.
func (p *PodOptions) Validate(field string) error {
	if p == nil {
		return nil
	}
	if p.RuntimeClassName != "" {
		if err := ValidateDNSSubdomain(field+".runtime_class_name", p.RuntimeClassName); err != nil {
			return err
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
		if e := t.check(); e != nil {
			e.Field = fmt.Sprintf("%s.tolerations[%d].%s", field, i, e.Field)
			return e
		}
	}
	if len(p.EnvFromSecrets) > MaxEnvFromSecrets {
		return &InvalidError{Field: field + ".env_from_secrets", Value: strconv.Itoa(len(p.EnvFromSecrets)), Reason: fmt.Sprintf("at most %d are allowed", MaxEnvFromSecrets)}
	}
	for i, name := range p.EnvFromSecrets {
		f := func() string { return fmt.Sprintf("%s.env_from_secrets[%d]", field, i) }
		if err := ValidateSecretName("", name); err != nil {
			e := err.(*InvalidError)
			e.Field = f()
			return e
		}
		if slices.Index(p.EnvFromSecrets, name) < i {
			return &InvalidError{Field: f(), Value: name, Reason: "is named twice"}
		}
	}
	return nil
}

// Validate checks one toleration by Kubernetes' rules: a key is a label
// key, or empty only with Exists (which then tolerates every taint); a
// value is a label value, and empty with Exists; toleration seconds only
// with NoExecute, and not negative.
func (t Toleration) Validate(field string) error {
	if e := t.check(); e != nil {
		e.Field = field + "." + e.Field
		return e
	}
	return nil
}

// check is Validate with the field named relative to the toleration
// ("effect"), so a valid one costs no field name.
func (t Toleration) check() *InvalidError {
	if t.Key != "" {
		if r := labelKeyReason(t.Key); r != "" {
			return &InvalidError{Field: "key", Value: t.Key, Reason: r}
		}
	}
	switch t.Operator {
	case TolerationExists:
		if t.Value != "" {
			return &InvalidError{Field: "value", Value: t.Value, Reason: "must be empty when the operator is Exists"}
		}
	case TolerationEqual, "":
		if t.Key == "" {
			return &InvalidError{Field: "operator", Value: t.Operator, Reason: "must be Exists when the key is empty"}
		}
		if r := labelValueReason(t.Value); r != "" {
			return &InvalidError{Field: "value", Value: t.Value, Reason: r}
		}
	default:
		return &InvalidError{Field: "operator", Value: t.Operator, Reason: "must be Exists or Equal (empty: Equal)"}
	}
	switch t.Effect {
	case "", EffectNoSchedule, EffectPreferNoSchedule, EffectNoExecute:
	default:
		return &InvalidError{Field: "effect", Value: t.Effect, Reason: "must be NoSchedule, PreferNoSchedule, NoExecute or empty (every effect)"}
	}
	if t.TolerationSeconds != nil {
		v := strconv.FormatInt(*t.TolerationSeconds, 10)
		if t.Effect != EffectNoExecute {
			return &InvalidError{Field: "toleration_seconds", Value: v, Reason: "is allowed only with the effect NoExecute"}
		}
		if *t.TolerationSeconds < 0 {
			return &InvalidError{Field: "toleration_seconds", Value: v, Reason: "must not be negative"}
		}
	}
	return nil
}

func validateLabels(field string, m map[string]string, refuseReserved bool) error {
	if len(m) > MaxPodMapEntries {
		return &InvalidError{Field: field, Value: strconv.Itoa(len(m)), Reason: fmt.Sprintf("at most %d entries are allowed", MaxPodMapEntries)}
	}
	for _, k := range sortedKeys(m) {
		if r := labelKeyReason(k); r != "" {
			return &InvalidError{Field: entryField(field, k), Value: k, Reason: r}
		}
		if refuseReserved && ReservedKey(k) {
			return reservedError(entryField(field, k), k)
		}
		if r := labelValueReason(m[k]); r != "" {
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
		if r := labelKeyReason(k); r != "" {
			return &InvalidError{Field: entryField(field, k), Value: k, Reason: r}
		}
		if ReservedKey(k) {
			return reservedError(entryField(field, k), k)
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

func reservedError(field, k string) error {
	return &InvalidError{Field: field, Value: k, Reason: "is a key sporectl sets itself (" + ReservedPrefix + "*, " + strings.Join(reservedKeys, ", ") + ")"}
}

// ValidateLabelKey checks a label (or annotation) key by Kubernetes'
// rules for a qualified name: an optional DNS-1123 subdomain prefix and a
// slash, then a name of at most 63 characters, alphanumeric at both ends,
// with '-', '_' and '.' inside.
func ValidateLabelKey(field, k string) error {
	if r := labelKeyReason(k); r != "" {
		return &InvalidError{Field: field, Value: k, Reason: r}
	}
	return nil
}

// ValidateLabelValue checks a label value: empty, or at most 63
// characters of the label name's grammar.
func ValidateLabelValue(field, v string) error {
	if r := labelValueReason(v); r != "" {
		return &InvalidError{Field: field, Value: v, Reason: r}
	}
	return nil
}

// ValidateAnnotationValue checks an annotation value: any UTF-8 text up
// to MaxAnnotationValue bytes, with no control character but newline and
// tab (a record is printed on terminals).
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

// ValidateDNSSubdomain checks a DNS-1123 subdomain (the grammar of most
// Kubernetes object names): at most 253 characters, dot-separated labels
// of lowercase letters, digits and '-', each alphanumeric at both ends.
func ValidateDNSSubdomain(field, v string) error {
	if r := dnsSubdomainReason(v); r != "" {
		return &InvalidError{Field: field, Value: v, Reason: r}
	}
	return nil
}

// The grammar, as reasons: "" is valid. Written out rather than as
// regular expressions: every read of a record checks it.

func labelKeyReason(k string) string {
	name := k
	if prefix, rest, ok := strings.Cut(k, "/"); ok {
		if prefix == "" {
			return "has an empty prefix before '/'"
		}
		if r := dnsSubdomainReason(prefix); r != "" {
			return "prefix " + r
		}
		name = rest
	}
	switch {
	case name == "":
		return "must have a name (after the prefix and '/', if any)"
	case len(name) > maxQualifiedNameName:
		return fmt.Sprintf("name is %d characters; at most %d", len(name), maxQualifiedNameName)
	case !qualifiedPart(name):
		return "name must be letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	}
	return ""
}

func labelValueReason(v string) string {
	switch {
	case v == "":
		return ""
	case len(v) > maxLabelValue:
		return fmt.Sprintf("value is %d characters; at most %d", len(v), maxLabelValue)
	case !qualifiedPart(v):
		return "value must be empty, or letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
	}
	return ""
}

func dnsSubdomainReason(v string) string {
	switch {
	case v == "":
		return "must not be empty"
	case len(v) > maxDNSSubdomain:
		return fmt.Sprintf("is %d characters; at most %d", len(v), maxDNSSubdomain)
	}
	for part := range strings.SplitSeq(v, ".") {
		if !dnsLabel(part) {
			return "must be lowercase letters, digits, '-' and '.', each part between dots starting and ending with a letter or digit"
		}
	}
	return ""
}

func alnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }

func lowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

// qualifiedPart is Kubernetes' ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9].
func qualifiedPart(s string) bool {
	if s == "" || !alnum(s[0]) || !alnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !alnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// dnsLabel is Kubernetes' [a-z0-9]([-a-z0-9]*[a-z0-9])?.
func dnsLabel(s string) bool {
	if s == "" || !lowerAlnum(s[0]) || !lowerAlnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !lowerAlnum(c) && c != '-' {
			return false
		}
	}
	return true
}

// ValidateSecretName checks the name of a Secret given to a pod's
// environment: a DNS-1123 subdomain, and neither a spore's own Secret
// (SporeSecretPrefix) nor sporectl's (SporectlSecretPrefix).
func ValidateSecretName(field, name string) error {
	if err := ValidateDNSSubdomain(field, name); err != nil {
		return err
	}
	switch {
	case strings.HasPrefix(name, SporeSecretPrefix):
		return &InvalidError{Field: field, Value: name, Reason: "names a spore's own Secret (" + SporeSecretPrefix + "*), which holds its tokens"}
	case strings.HasPrefix(name, SporectlSecretPrefix):
		return &InvalidError{Field: field, Value: name, Reason: "names one of sporectl's Secrets (" + SporectlSecretPrefix + "*: the model's, which every pod gets already, and the store's credentials)"}
	}
	return nil
}
