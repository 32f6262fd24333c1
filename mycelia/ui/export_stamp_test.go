package ui

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
)

// Every field of a spore's health that its JSON leaves out is in its
// line stamp, by name and type.
func TestLineStampsHaveTheWholeHealth(t *testing.T) {
	hidden := reflect.TypeFor[hiddenHealth]()
	health := reflect.TypeFor[reconcile.SporeHealth]()
	for i := range health.NumField() {
		f := health.Field(i)
		if f.Tag.Get("json") != "-" {
			continue
		}
		h, ok := hidden.FieldByName(f.Name)
		require.True(t, ok, "SporeHealth.%s is in no stamp", f.Name)
		require.Equal(t, f.Type, h.Type, f.Name)
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
