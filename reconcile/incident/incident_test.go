package incident_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile/incident"
	"github.com/sporectl/sporectl/state"
)

func line(t *testing.T, v any) state.Event {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return state.Event{Kind: state.KindAgent, Line: b, At: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func toolUse(t *testing.T, id, name string, input map[string]string) state.Event {
	return line(t, map[string]any{"type": "assistant", "message": map[string]any{"content": []any{map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}}}})
}

func toolResult(t *testing.T, id string, isError bool) state.Event {
	return line(t, map[string]any{"type": "user", "message": map[string]any{"content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "is_error": isError, "content": "x"}}}})
}

func TestCollisionKey(t *testing.T) {
	c := incident.Collision{Path: "repo/x.go", Spores: []incident.FileEdit{{ID: "a", Edits: 3}, {ID: "b"}}}
	require.Equal(t, "collision:a,b:repo/x.go", incident.CollisionKey(c))
	c.Spores[0].Edits = 9
	require.Equal(t, "collision:a,b:repo/x.go", incident.CollisionKey(c), "more edits: the same incident")
	c.Spores = append(c.Spores, incident.FileEdit{ID: "c"})
	require.Equal(t, "collision:a,b,c:repo/x.go", incident.CollisionKey(c), "a third spore: a new incident")

	for _, p := range []string{strings.Repeat("d/", 200) + "x.go", "a\nb", "bad\xffutf8"} {
		k := incident.CollisionKey(incident.Collision{Path: p, Spores: []incident.FileEdit{{ID: "a"}, {ID: "b"}}})
		require.True(t, strings.HasPrefix(k, "collision:sha256:"), k)
		require.LessOrEqual(t, len(k), state.MaxIncidentKey)
		require.Equal(t, k, incident.CollisionKey(incident.Collision{Path: p, Spores: []incident.FileEdit{{ID: "a"}, {ID: "b"}}}), "stable")
		sp := state.Spore{Wish: state.Wish{ID: "arch", Colony: "lab", Rank: state.RankArch, Desired: state.Running}, Status: state.Status{SummonsRecord: state.SummonsRecord{Incidents: []state.Incident{{Key: k}}}}}
		require.NoError(t, sp.Validate(), "a key the store takes")
	}
	require.Equal(t, "failed:a:42", incident.DeployKey(incident.Deploy{Spore: "a", Seq: 42, What: "anything"}))
}

func TestTouches(t *testing.T) {
	for name, tc := range map[string]struct {
		evs  []state.Event
		want incident.Touch
	}{
		"edit":           {[]state.Event{toolUse(t, "1", "Write", map[string]string{"file_path": "/x"})}, incident.Touch{Edits: true}},
		"read":           {[]state.Event{toolUse(t, "1", "Read", map[string]string{"file_path": "/x"})}, incident.Touch{}},
		"deploy":         {[]state.Event{toolUse(t, "1", "Bash", map[string]string{"command": "helm upgrade web ."})}, incident.Touch{Deploys: true}},
		"other bash":     {[]state.Event{toolUse(t, "1", "Bash", map[string]string{"command": "go test ./..."})}, incident.Touch{}},
		"failed result":  {[]state.Event{toolResult(t, "1", true)}, incident.Touch{Deploys: true}},
		"fine result":    {[]state.Event{toolResult(t, "1", false)}, incident.Touch{}},
		"lifecycle only": {[]state.Event{{Kind: state.KindLifecycle, Action: "report-deploy-failed"}}, incident.Touch{}},
		"both": {[]state.Event{toolUse(t, "1", "Edit", map[string]string{"file_path": "/x"}), toolResult(t, "2", true)},
			incident.Touch{Edits: true, Deploys: true}},
	} {
		require.Equal(t, tc.want, incident.Touches(tc.evs), name)
	}
}

func TestDeploysPairResultsWithCalls(t *testing.T) {
	evs := []state.Event{
		toolUse(t, "p", "Bash", map[string]string{"command": "git push"}),
		toolUse(t, "d", "Bash", map[string]string{"command": "kubectl apply -f k/"}),
		toolResult(t, "p", true),
		toolResult(t, "d", false),
		{Kind: state.KindLifecycle, Action: incident.ReportAction(incident.ReportDeploy, true), Text: "timed out", Seq: 9},
		{Kind: state.KindLifecycle, Action: "report-release"},
	}
	ds := incident.Deploys("a", evs)
	require.Len(t, ds, 3)
	require.True(t, ds[0].Failed)
	require.Equal(t, incident.ReportPush, ds[0].Kind)
	require.False(t, ds[1].Failed)
	require.Equal(t, incident.Deploy{Spore: "a", Seq: 9, Kind: incident.ReportDeploy, Source: incident.SourceReport, Failed: true, What: "timed out"}, ds[2])
}
