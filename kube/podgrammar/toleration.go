package podgrammar

import "strconv"

// Toleration operators and taint effects.
const (
	TolerationExists = "Exists"
	TolerationEqual  = "Equal"

	EffectNoSchedule       = "NoSchedule"
	EffectPreferNoSchedule = "PreferNoSchedule"
	EffectNoExecute        = "NoExecute"
)

// Toleration is what is wrong with a toleration by Kubernetes' rules, as
// the field at fault ("key", "operator", "value", "effect",
// "toleration_seconds"), the value in it and why; field is "" when it is
// valid. A key is a label key, or empty only with Exists (which then
// tolerates every taint); a value is a label value, and empty with
// Exists; toleration seconds only with NoExecute, and not negative.
func Toleration(key, operator, value, effect string, seconds *int64) (field, bad, reason string) {
	if key != "" {
		if r := LabelKey(key); r != "" {
			return "key", key, r
		}
	}
	switch operator {
	case TolerationExists:
		if value != "" {
			return "value", value, "must be empty when the operator is Exists"
		}
	case TolerationEqual, "":
		if key == "" {
			return "operator", operator, "must be Exists when the key is empty"
		}
		if r := LabelValue(value); r != "" {
			return "value", value, r
		}
	default:
		return "operator", operator, "must be Exists or Equal (empty: Equal)"
	}
	switch effect {
	case "", EffectNoSchedule, EffectPreferNoSchedule, EffectNoExecute:
	default:
		return "effect", effect, "must be NoSchedule, PreferNoSchedule, NoExecute or empty (every effect)"
	}
	if seconds != nil {
		v := strconv.FormatInt(*seconds, 10)
		if effect != EffectNoExecute {
			return "toleration_seconds", v, "is allowed only with the effect NoExecute"
		}
		if *seconds < 0 {
			return "toleration_seconds", v, "must not be negative"
		}
	}
	return "", "", ""
}
