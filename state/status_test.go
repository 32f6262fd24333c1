package state_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// everyStatusField is a status with every field set.
func everyStatusField() state.Status {
	at := time.Date(2026, 12, 6, 10, 30, 0, 0, time.UTC)
	return state.Status{
		ObservedGeneration: 4,
		HealthRecord: state.HealthRecord{Restarts: 2, Failures: []time.Time{at}, NotBefore: at.Add(time.Minute), BreakerOpen: true,
			Health: "Dead", HealthReason: "OOMKilled"},
		IngestRecord:  state.IngestRecord{BridgeSeq: 41, Activity: []state.HourActivity{{Hour: at.Truncate(time.Hour), Turns: 3}}, ActiveAt: at},
		UpkeepRecord:  state.UpkeepRecord{LoopDue: at.Add(time.Hour)},
		SummonsRecord: state.SummonsRecord{Incidents: []state.Incident{{Key: "collision:a.go:x,y", At: at}}},
	}
}

// TestStatusJSONIsFlat: the owners' structs are a matter of the code, not
// of the stored form. A status is one flat object whose keys are its
// fields' own (a group tagged with a name of its own would nest its
// fields, and no stored record would read as it was written).
func TestStatusJSONIsFlat(t *testing.T) {
	b, err := json.Marshal(everyStatusField())
	require.NoError(t, err)
	var got map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &got))

	var want []string
	for _, f := range reflect.VisibleFields(reflect.TypeFor[state.Status]()) {
		if f.Anonymous {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		require.NotEmpty(t, name, "field %s has no JSON name", f.Name)
		want = append(want, name)
	}
	require.NotEmpty(t, got)
	for k := range got {
		require.Contains(t, want, k, "a key of the status that is no field's own")
	}
}

// TestStatusReadsInAnyKeyOrder: a record written before the status was cut
// by owner, its keys in the order of then, reads as the same status as one
// written now.
func TestStatusReadsInAnyKeyOrder(t *testing.T) {
	before := `{"observed_generation":4,"restarts":2,"failures":["2026-12-06T10:30:00Z"],"not_before":"2026-12-06T10:31:00Z",` +
		`"breaker_open":true,"bridge_seq":41,"health":"Dead","health_reason":"OOMKilled","loop_due":"2026-12-06T11:30:00Z",` +
		`"activity":[{"hour":"2026-12-06T10:00:00Z","turns":3}],"incidents":[{"key":"collision:a.go:x,y","at":"2026-12-06T10:30:00Z"}],` +
		`"active_at":"2026-12-06T10:30:00Z"}`
	var old state.Status
	require.NoError(t, json.Unmarshal([]byte(before), &old))
	require.True(t, old.Equal(everyStatusField()), "the record of before reads as the same status")

	now, err := json.Marshal(everyStatusField())
	require.NoError(t, err)
	var again state.Status
	require.NoError(t, json.Unmarshal(now, &again))
	require.True(t, again.Equal(old), "and so does the record written now")
}
