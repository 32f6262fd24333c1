package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/sporectl/sporectl/internal/quote"
	"github.com/sporectl/sporectl/kube/podgrammar"
	"github.com/sporectl/sporectl/state"
)

// podFlags are the flags that set a spore's pod options (state.PodOptions,
// docs/runtimes.md "Pod options"). The repeatable ones are string arrays,
// not slices: an annotation's value may hold a comma.
type podFlags struct {
	RuntimeClass   string
	NodeSelector   []string
	Tolerations    []string
	EnvFromSecrets []string
	Labels         []string
	Annotations    []string
}

// podFlagNames are the flags of podFlags, in the order they are listed.
var podFlagNames = []string{"runtime-class", "node-selector", "toleration", "env-from-secret", "label", "annotation"}

func (p *podFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&p.RuntimeClass, "runtime-class", "", "the pod's RuntimeClass, e.g. gvisor or kata (kube)")
	fl.StringArrayVar(&p.NodeSelector, "node-selector", nil, "KEY=VALUE a node must be labelled with; repeatable (kube)")
	fl.StringArrayVar(&p.Tolerations, "toleration", nil, "a taint the pod tolerates: KEY=VALUE:EFFECT, KEY:EFFECT (any value), KEY=VALUE or KEY (any effect); repeatable (kube)")
	fl.StringArrayVar(&p.EnvFromSecrets, "env-from-secret", nil, "a Secret in the namespace whose keys become the spore's environment; repeatable (kube)")
	fl.StringArrayVar(&p.Labels, "label", nil, "KEY=VALUE label on the pod; repeatable (kube)")
	fl.StringArrayVar(&p.Annotations, "annotation", nil, "KEY=VALUE annotation on the pod; repeatable (kube)")
}

// given lists the pod flags the user gave, by name.
func (p *podFlags) given(changed func(string) bool) []string {
	var out []string
	for _, n := range podFlagNames {
		if changed(n) {
			out = append(out, "--"+n)
		}
	}
	return out
}

// options turns the flags into pod options, nil when none was given. A
// bad value is a usage error naming the flag and the value, with the
// rule it breaks.
func (p *podFlags) options(changed func(string) bool) (*state.PodOptions, error) {
	return p.onto(nil, changed, false)
}

// onto returns cur with each field whose flag was given replaced by the
// flag's values (nil when nothing is left). With clear, an empty value
// (--runtime-class "", or a repeatable flag given once as "") removes
// the field instead; without it, an empty value is refused like any bad
// one. cur is not changed.
func (p *podFlags) onto(cur *state.PodOptions, changed func(string) bool, clear bool) (*state.PodOptions, error) {
	if len(p.given(changed)) == 0 {
		return cur, nil
	}
	o := state.MergePod(cur)
	cleared := func(vs []string) bool { return clear && len(vs) == 1 && vs[0] == "" }
	if changed("runtime-class") {
		o.RuntimeClassName = ""
		if !clear || p.RuntimeClass != "" {
			if err := invalid("runtime class", p.RuntimeClass, podgrammar.DNSSubdomain(p.RuntimeClass)); err != nil {
				return nil, flagValueError("runtime-class", p.RuntimeClass, err)
			}
			o.RuntimeClassName = p.RuntimeClass
		}
	}
	var err error
	for _, m := range []struct {
		flag     string
		raw      []string
		dst      *map[string]string
		value    func(field, v string) error
		reserved bool
	}{
		{"node-selector", p.NodeSelector, &o.NodeSelector, labelValue, false},
		{"label", p.Labels, &o.Labels, labelValue, true},
		{"annotation", p.Annotations, &o.Annotations, state.ValidateAnnotationValue, true},
	} {
		switch {
		case !changed(m.flag):
		case cleared(m.raw):
			*m.dst = nil
		default:
			if *m.dst, err = keyValues(m.flag, m.raw, m.value, m.reserved); err != nil {
				return nil, err
			}
		}
	}
	switch {
	case !changed("toleration"):
	case cleared(p.Tolerations):
		o.Tolerations = nil
	default:
		o.Tolerations = nil
		for _, raw := range p.Tolerations {
			t, err := parseToleration(raw)
			if err != nil {
				return nil, err
			}
			o.Tolerations = append(o.Tolerations, t)
		}
	}
	switch {
	case !changed("env-from-secret"):
	case cleared(p.EnvFromSecrets):
		o.EnvFromSecrets = nil
	default:
		for i, name := range p.EnvFromSecrets {
			if err := invalid("secret name", name, podgrammar.SecretName(name)); err != nil {
				return nil, flagValueError("env-from-secret", name, err)
			}
			if slices.Index(p.EnvFromSecrets, name) < i {
				return nil, usageErrorf("invalid value %s for --env-from-secret: given twice", quote.Value(name))
			}
		}
		o.EnvFromSecrets = slices.Clone(p.EnvFromSecrets)
	}
	// What is left is a bound on how many values a flag may have.
	if err := o.Validate("pod"); err != nil {
		var inv *state.InvalidError
		if errors.As(err, &inv) {
			field, _, _ := strings.Cut(strings.TrimPrefix(inv.Field, "pod."), "[")
			return nil, usageErrorf("too many --%s flags (%s): %s", podFieldFlags[field], inv.Value, inv.Reason)
		}
		return nil, err
	}
	if o.IsZero() {
		return nil, nil
	}
	return &o, nil
}

// podFieldFlags name the flag of each field of state.PodOptions.
var podFieldFlags = map[string]string{
	"runtime_class_name": "runtime-class", "node_selector": "node-selector", "tolerations": "toleration",
	"env_from_secrets": "env-from-secret", "labels": "label", "annotations": "annotation",
}

// keyValues parses repeated KEY=VALUE flag values into a map: each key a
// label key (not one sporectl sets, when reserved), given once, each
// value checked by value.
func keyValues(flag string, raw []string, value func(field, v string) error, reserved bool) (map[string]string, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	m := make(map[string]string, len(raw))
	for _, kv := range raw {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, usageErrorf("invalid value %s for --%s: want KEY=VALUE", quote.Value(kv), flag)
		}
		if err := invalid("key", k, podgrammar.LabelKey(k)); err != nil {
			return nil, flagValueError(flag, kv, err)
		}
		if reserved && podgrammar.Reserved(k) {
			return nil, usageErrorf("invalid value %s for --%s: %s is a key sporectl sets itself", quote.Value(kv), flag, k)
		}
		if err := value("value", v); err != nil {
			return nil, flagValueError(flag, kv, err)
		}
		if _, dup := m[k]; dup {
			return nil, usageErrorf("invalid value %s for --%s: key %s is given twice", quote.Value(kv), flag, k)
		}
		m[k] = v
	}
	return m, nil
}

// invalid is a reason of the pods' grammar (kube/podgrammar; "" is
// valid) as the error of value v at field, which flagValueError words.
func invalid(field, v, reason string) error {
	if reason == "" {
		return nil
	}
	return &state.InvalidError{Field: field, Value: v, Reason: reason}
}

// labelValue checks a label's (or node selector's) value at field.
func labelValue(field, v string) error { return invalid(field, v, podgrammar.LabelValue(v)) }

// parseToleration reads kubectl taint's syntax as a toleration:
// KEY=VALUE:EFFECT and KEY=VALUE match the value (Equal), KEY:EFFECT and
// KEY any value (Exists); without an effect, every effect.
func parseToleration(raw string) (state.Toleration, error) {
	spec, effect, hasEffect := strings.Cut(raw, ":")
	if hasEffect && effect == "" {
		return state.Toleration{}, usageErrorf("invalid value %s for --toleration: nothing after ':'; want an effect (NoSchedule, PreferNoSchedule, NoExecute) or no ':'", quote.Value(raw))
	}
	key, value, hasValue := strings.Cut(spec, "=")
	if key == "" {
		return state.Toleration{}, usageErrorf("invalid value %s for --toleration: want KEY=VALUE:EFFECT, KEY:EFFECT, KEY=VALUE or KEY", quote.Value(raw))
	}
	t := state.Toleration{Key: key, Operator: state.TolerationExists, Effect: effect}
	if hasValue {
		t.Operator, t.Value = state.TolerationEqual, value
	}
	if err := t.Validate("toleration"); err != nil {
		return t, flagValueError("toleration", raw, err)
	}
	return t, nil
}

// flagValueError is err, a state.InvalidError about one part of a flag's
// value, as a usage error naming the flag and the whole value.
func flagValueError(flag, value string, err error) error {
	var inv *state.InvalidError
	if errors.As(err, &inv) {
		return usageErrorf("invalid value %s for --%s: %s", quote.Value(value), flag, withField(inv.Field, inv.Reason))
	}
	return usageErrorf("invalid value %s for --%s: %v", quote.Value(value), flag, err)
}

// withField puts the last part of a state field path ("toleration.effect"
// is "effect"), what a person who typed the flag calls it, before reason,
// unless reason starts with it already.
func withField(field, reason string) string {
	if i := strings.LastIndexByte(field, '.'); i >= 0 {
		field = field[i+1:]
	}
	if field == "" || strings.HasPrefix(reason, field+" ") {
		return reason
	}
	return field + " " + reason
}

// podWarning is the note of create and init when pod options go to a
// store whose runtime ignores them; kept says who keeps them.
func podWarning(flags []string, kept string) string {
	return fmt.Sprintf("warning: the local runtime ignores pod options (%s): %s, and pods get them once the store runs on Kubernetes (sporectl init --runtime kube)", strings.Join(flags, ", "), kept)
}
