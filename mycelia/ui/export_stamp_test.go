package ui

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// Every field of a spore's health is in its line stamp but the bridge's
// error: setting any one of them alone changes the stamp.
func TestLineStampsHaveTheWholeHealth(t *testing.T) {
	var zero reconcile.SporeHealth
	require.NotEqual(t, lineStamp(&zero, "page"), lineStamp(&zero, "another page"))
	paths := leafPaths(t, reflect.TypeFor[reconcile.SporeHealth](), "SporeHealth", nil)
	n := 0
	for name, idx := range paths {
		if name == "SporeHealth.Observed.BridgeErr" {
			continue
		}
		n++
		// Against a health with the same pointers made, the leaf zero.
		var before, after reconcile.SporeHealth
		setLeaf(t, reflect.ValueOf(&before).Elem(), idx, false)
		setLeaf(t, reflect.ValueOf(&after).Elem(), idx, true)
		require.NotEqual(t, lineStamp(&before, "page"), lineStamp(&after, "page"), "%s is not in the line stamp", name)
	}
	require.Greater(t, n, 30, "the walk found the fields")
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
		v.Set(reflect.ValueOf(t0))
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

// A change of the pending count alone, which the index shows and the
// health's JSON does not, renders the index again; nothing else is.
func TestPendingAloneRendersTheIndexAgain(t *testing.T) {
	f := newFixture(t)
	f.colony()
	out, err := f.h.Pass.Run(context.Background(), reconcile.Options{})
	require.NoError(t, err)
	files, err := Export(context.Background(), f.st, out.Result, t0, nil)
	require.NoError(t, err)
	prev := stampsIn(t, files)

	again, err := Export(context.Background(), f.st, out.Result, t0, prev)
	require.NoError(t, err)
	require.Nil(t, again[ExportIndex], "nothing changed")
	require.Nil(t, again[ExportStamps], "nor the stamps")

	res := out.Result
	res.Spores = append([]reconcile.SporeHealth(nil), res.Spores...)
	res.Spores[0].Pending++
	changed, err := Export(context.Background(), f.st, res, t0, prev)
	require.NoError(t, err)
	require.NotNil(t, changed[ExportIndex])
	require.NotNil(t, changed[ExportStamps])
	for rel, b := range changed {
		if rel != ExportIndex && rel != ExportStamps && strings.HasPrefix(rel, ExportSpores+"/") {
			require.Nil(t, b, "%s is not rendered again", rel)
		}
	}
}

// stampsIn reads the stamps an export made.
func stampsIn(t *testing.T, files map[string][]byte) map[string]string {
	t.Helper()
	var stamps map[string]string
	require.NoError(t, json.Unmarshal(files[ExportStamps], &stamps))
	return stamps
}

// An export of a store at the revision its stamps were made at reads no
// record and renders nothing; a change of one record makes the next read
// them all again and render that spore's page (and the index) alone; and
// stamps that lack a record's digest are not trusted to stand for it.
func TestAnExportAtTheSameRevisionReadsNoRecord(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.colony()
	out, err := f.h.Pass.Run(ctx, reconcile.Options{})
	require.NoError(t, err)
	files, err := Export(ctx, f.st, out.Result, t0, nil)
	require.NoError(t, err)
	prev := stampsIn(t, files)
	require.NotEmpty(t, prev[revisionStamp])

	reads := &statetest.Reads{Store: f.st}
	again, err := Export(ctx, reads, out.Result, t0, prev)
	require.NoError(t, err)
	require.Zero(t, reads.Records.Load(), "records read at the same revision")
	require.Zero(t, reads.Fleet.Load(), "fleet reads at the same revision")
	for rel, b := range again {
		if !strings.HasPrefix(rel, ExportStatic+"/") {
			require.Nil(t, b, "%s is not rendered again", rel)
		}
	}

	// Stamps without a record's digest: the records are read again.
	partial := maps.Clone(prev)
	delete(partial, recordStamp+"lab-b")
	reads.Reset()
	_, err = Export(ctx, reads, out.Result, t0, partial)
	require.NoError(t, err)
	require.Positive(t, reads.Fleet.Load(), "a record's digest missing")

	require.NoError(t, f.st.Update(ctx, func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, "lab-b")
		if err != nil {
			return err
		}
		w := sp.Wish
		w.Role, w.Generation = "reviewer", sp.Generation+1
		return tx.PutWish(ctx, w)
	}))
	out, err = f.h.Pass.Run(ctx, reconcile.Options{})
	require.NoError(t, err)
	reads.Reset()
	changed, err := Export(ctx, reads, out.Result, t0, prev)
	require.NoError(t, err)
	require.Positive(t, reads.Fleet.Load(), "the store changed: the records are read")
	next := stampsIn(t, changed)
	require.NotEqual(t, prev[revisionStamp], next[revisionStamp])
	require.NotEqual(t, prev[recordStamp+"lab-b"], next[recordStamp+"lab-b"])
	require.NotNil(t, changed[ExportIndex])
	require.NotNil(t, changed[ExportSpores+"/lab-b.html"])
	for _, id := range []string{"arch", "lab-a", "lab-c", "far-x"} {
		require.Equal(t, prev[recordStamp+id], next[recordStamp+id], id)
		require.Nil(t, changed[ExportSpores+"/"+id+".html"], "%s is not rendered again", id)
	}
}
