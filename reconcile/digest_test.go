package reconcile

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/sporectl/sporectl/internal/digest"
)

func healthDigest(h *SporeHealth) string {
	d := digest.New()
	h.AddTo(d)
	return d.Sum()
}

// Every field of a spore's health is in its digest but the bridge's
// error: setting any one of them alone changes the digest.
func TestHealthDigestHasEveryField(t *testing.T) {
	paths := leafPaths(t, reflect.TypeFor[SporeHealth](), "SporeHealth", nil)
	n := 0
	for name, idx := range paths {
		if name == "SporeHealth.Observed.BridgeErr" {
			continue
		}
		n++
		// Against a health with the same pointers made, the leaf zero.
		var before, after SporeHealth
		setLeaf(t, reflect.ValueOf(&before).Elem(), idx, false)
		setLeaf(t, reflect.ValueOf(&after).Elem(), idx, true)
		if healthDigest(&before) == healthDigest(&after) {
			t.Errorf("%s is not in the digest", name)
		}
	}
	if n < 30 {
		t.Fatalf("the walk found %d fields", n)
	}
}

// leafPaths is the field index path of every leaf below a value of type
// typ, by name: a pointer to a struct is a leaf (nil or not) and so is
// each field below it.
func leafPaths(t *testing.T, typ reflect.Type, name string, idx []int) map[string][]int {
	t.Helper()
	out := map[string][]int{}
	switch {
	case typ == reflect.TypeFor[time.Time]():
		out[name] = idx
	case typ.Kind() == reflect.Struct:
		for i := range typ.NumField() {
			f := typ.Field(i)
			maps.Copy(out, leafPaths(t, f.Type, name+"."+f.Name, append(slices.Clone(idx), i)))
		}
	case typ.Kind() == reflect.Pointer && typ.Elem().Kind() == reflect.Struct:
		out[name] = idx
		maps.Copy(out, leafPaths(t, typ.Elem(), name+"*", idx))
	default:
		out[name] = idx
	}
	return out
}

// setLeaf makes the pointers on the way to the leaf at idx below v, and
// when set sets the leaf to a value other than its zero.
func setLeaf(t *testing.T, v reflect.Value, idx []int, set bool) {
	t.Helper()
	for _, i := range idx {
		if v.Kind() == reflect.Pointer {
			v.Set(reflect.New(v.Type().Elem()))
			v = v.Elem()
		}
		v = v.Field(i)
	}
	if !set {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
	case reflect.Struct: // a time
		v.Set(reflect.ValueOf(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)))
	case reflect.String:
		v.SetString("x")
	case reflect.Int, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint64:
		v.SetUint(1)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Interface:
		v.Set(reflect.ValueOf(errors.New("x")))
	default:
		t.Fatalf("a %s, which this test cannot set", v.Kind())
	}
}
