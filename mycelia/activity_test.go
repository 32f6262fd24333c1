package mycelia

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/incident"
	"github.com/sporectl/sporectl/state"
)

func TestCommandKind(t *testing.T) {
	for cmd, want := range map[string]string{
		"git push origin main":                            "push",
		"cd repo && git push":                             "push",
		"git -C /home/spore/repo push --force-with-lease": "push",
		"git --no-pager push -u origin x":                 "push",
		"git commit -m 'push it'":                         "",
		"git pushd":                                       "",
		"echo git push":                                   "push", // a documented false positive: the words are there
		"kubectl apply -f deploy/":                        "deploy",
		"kubectl -n prod rollout restart deploy/web":      "deploy",
		"kubectl get pods":                                "",
		"helm upgrade --install web ./chart":              "deploy",
		"terraform apply -auto-approve":                   "deploy",
		"make deploy-prod":                                "deploy",
		"make test":                                       "",
		"flyctl deploy":                                   "deploy",
		"gcloud run deploy web --image x":                 "deploy",
		"vercel --prod":                                   "deploy",
		"./scripts/deploy.sh staging":                     "deploy",
		"deploy":                                          "deploy",
		"cat deploy.sh":                                   "",
		"go test ./...":                                   "",
	} {
		require.Equal(t, want, incident.CommandKind(cmd), cmd)
	}
}

func TestDeploysFromToolsAndReports(t *testing.T) {
	h := newHarness(t).colony()
	h.agentLines("lab-a", toolUseLine("u1", "Bash", map[string]string{"command": "git push origin main"}), toolResultLine("u1", true, "rejected"))
	h.agentLines("lab-c", toolUseLine("u2", "Bash", map[string]string{"command": "kubectl apply -f k8s/"}), toolResultLine("u2", false, "configured"),
		toolUseLine("u3", "Bash", map[string]string{"command": "go test ./..."}))
	r := h.do("lab-c", http.MethodPost, "/api/mycologist/report", map[string]any{"kind": "push", "text": "pushed v1.2 to origin"})
	require.Equal(t, http.StatusCreated, r.status, "answer: %s", r.body)

	r = h.do("lab-myco", http.MethodGet, "/api/mycologist/deploys", nil)
	require.Equal(t, http.StatusOK, r.status, "answer: %s", r.body)
	var l DeployList
	r.decode(t, &l)
	require.Len(t, l.Deploys, 3)
	got := map[string]Deploy{}
	for _, d := range l.Deploys {
		got[d.Spore+"/"+d.Source+"/"+d.Kind] = d
	}
	require.True(t, got["lab-a/tool/push"].Failed)
	require.Equal(t, "git push origin main", got["lab-a/tool/push"].What)
	require.False(t, got["lab-c/tool/deploy"].Failed)
	require.Equal(t, "pushed v1.2 to origin", got["lab-c/report/push"].What)

	for _, bad := range []any{
		map[string]any{"kind": "release", "text": "x"},
		map[string]any{"kind": "push", "text": " "},
		map[string]any{"kind": "push", "text": "a\x01b"},
		`{"kind": "push", "text": "x"} {}`,
	} {
		r := h.do("lab-c", http.MethodPost, "/api/mycologist/report", bad)
		require.Equal(t, http.StatusBadRequest, r.status, "%v: %s", bad, r.body)
	}
	r = h.do("lab-myco", http.MethodGet, "/api/mycologist/deploys?window=forever", nil)
	require.Equal(t, http.StatusBadRequest, r.status)
	r = h.do("lab-myco", http.MethodGet, "/api/mycologist/deploys?window=200h", nil)
	require.Equal(t, http.StatusBadRequest, r.status)
}

func TestCollisionsWindowAndPaths(t *testing.T) {
	h := newHarness(t).colony()
	// lab-a and lab-c, in different working directories, edit repo/x.go.
	h.agentLines("lab-a", initLine("/homes/lab-a"), toolUseLine("e1", "Edit", map[string]string{"file_path": "/homes/lab-a/repo/x.go"}),
		toolUseLine("e2", "MultiEdit", map[string]string{"file_path": "/homes/lab-a/repo/x.go"}))
	h.agentLines("lab-c", initLine("/homes/lab-c/"), toolUseLine("e3", "Write", map[string]string{"file_path": "/homes/lab-c/repo/x.go"}),
		toolUseLine("e4", "Read", map[string]string{"file_path": "/homes/lab-c/repo/y.go"}))
	h.agentLines("lab-b", toolUseLine("e5", "NotebookEdit", map[string]string{"notebook_path": "/abs/nb.ipynb"}))
	h.agentLines("lab-lead", toolUseLine("e6", "Edit", map[string]string{"file_path": "/abs/nb.ipynb"}))
	// An old edit of y.go by lab-b, outside the window.
	ctx := context.Background()
	require.NoError(t, h.st.Store.Update(ctx, func(tx state.Tx) error {
		_, err := tx.Append(ctx, "lab-b", []state.Event{{Kind: state.KindAgent, At: time.Now().Add(-48 * time.Hour), Line: json.RawMessage(toolUseLine("old", "Edit", map[string]string{"file_path": "/abs/y.go"}))}})
		return err
	}))

	r := h.do("lab-myco", http.MethodGet, "/api/mycologist/collisions", nil)
	require.Equal(t, http.StatusOK, r.status, "answer: %s", r.body)
	var l CollisionList
	r.decode(t, &l)
	require.Len(t, l.Files, 2, "%s", r.body)
	require.Equal(t, "/abs/nb.ipynb", l.Files[0].Path)
	require.Equal(t, "repo/x.go", l.Files[1].Path)
	require.Equal(t, "lab-a", l.Files[1].Spores[0].ID)
	require.Equal(t, 2, l.Files[1].Spores[0].Edits)
	require.Equal(t, "lab-c", l.Files[1].Spores[1].ID)
	require.Empty(t, l.Cut)
}

func TestRecentEventsIsBounded(t *testing.T) {
	h := newHarness(t).colony()
	for range 3 {
		h.agentLines("lab-a", toolUseLine("e", "Edit", map[string]string{"file_path": "/r/x.go"}))
		h.agentLines("lab-c", toolUseLine("e", "Edit", map[string]string{"file_path": "/r/x.go"}))
	}
	old := scanBound
	scanBound = 2
	t.Cleanup(func() { scanBound = old })
	r := h.do("lab-myco", http.MethodGet, "/api/mycologist/collisions", nil)
	require.Equal(t, http.StatusOK, r.status, "answer: %s", r.body)
	var l CollisionList
	r.decode(t, &l)
	require.Contains(t, l.Cut, "lab-a")
	require.Contains(t, l.Cut, "lab-c")
	require.Len(t, l.Files, 1)
	require.Equal(t, 2, l.Files[0].Spores[0].Edits, "only the last 2 events were read")
}

func TestFailedReportSummonsTheArchOnce(t *testing.T) {
	h := newHarness(t).colony()
	summonses := func() []state.Event {
		var out []state.Event
		for _, ev := range h.messages("arch") {
			if ev.From == reconcile.SummonsFrom {
				out = append(out, ev)
			}
		}
		return out
	}
	r := h.do("lab-c", http.MethodPost, "/api/mycologist/report", map[string]any{"kind": "deploy", "text": "deployed v2"})
	require.Equal(t, http.StatusCreated, r.status, "answer: %s", r.body)
	require.Empty(t, summonses(), "a deploy that went fine summons no one")

	r = h.do("lab-c", http.MethodPost, "/api/mycologist/report", map[string]any{"kind": "deploy", "failed": true, "text": "helm upgrade web: timed out"})
	require.Equal(t, http.StatusCreated, r.status, "answer: %s", r.body)
	var rep ReportResponse
	r.decode(t, &rep)
	got := summonses()
	require.Len(t, got, 1)
	require.Contains(t, got[0].Text, "Failed deploy: spore lab-c")
	require.Contains(t, got[0].Text, `"helm upgrade web: timed out"`)
	require.Contains(t, got[0].Text, "`mycologist spore lab-c`")
	require.Equal(t, SummonsRaised, rep.Summons)
	at := h.spore("arch").Incidents[0].At
	require.Equal(t, []state.Incident{{Key: fmt.Sprintf("failed:lab-c:%d", rep.Seq), At: at}, {Key: "summons:lab-c", At: at}}, h.spore("arch").Incidents,
		"the incident's key, and the summons counted against lab-c's limit")
	// Delivered at once: the [arch] is awake.
	var prompted int
	for _, p := range h.prompts("arch") {
		if p.From == reconcile.SummonsFrom {
			prompted++
			for id, tok := range h.tokens {
				require.NotContains(t, p.Text, tok, "the token of %s", id)
			}
		}
	}
	require.Equal(t, 1, prompted)

	// Passes that see the report again raise nothing more.
	_, err := h.srv.Pass.Run(context.Background(), reconcile.Options{Heal: true, Deliver: true})
	require.NoError(t, err)
	require.Len(t, summonses(), 1)
	r = h.do("lab-c", http.MethodPost, "/api/mycologist/report", map[string]any{"kind": "push", "failed": true, "text": "rejected"})
	require.Equal(t, http.StatusCreated, r.status, "answer: %s", r.body)
	require.Len(t, summonses(), 2, "a new failed report: a new summons")
	for id, tok := range h.tokens {
		require.NotContains(t, h.logs.String(), tok, "the token of %s", id)
	}
}

// The report route cannot flood the [arch]: 200 failed reports from one
// spore are all recorded in its log, and raise reconcile.SummonsLimit
// summonses; another spore's still raises one; a window later, the next
// counts every one held.
func TestFailedReportsAreLimitedPerSender(t *testing.T) {
	h := newHarness(t).colony()
	summonses := func() []state.Event {
		var out []state.Event
		for _, ev := range h.messages("arch") {
			if ev.From == reconcile.SummonsFrom {
				out = append(out, ev)
			}
		}
		return out
	}
	answers := map[string]int{}
	for i := range 200 {
		r := h.do("lab-c", http.MethodPost, "/api/mycologist/report", map[string]any{"kind": "push", "failed": true, "text": fmt.Sprintf("push %d rejected", i)})
		require.Equal(t, http.StatusCreated, r.status, "report %d: %s", i, r.body)
		var rep ReportResponse
		r.decode(t, &rep)
		answers[rep.Summons]++
	}
	require.Equal(t, map[string]int{SummonsRaised: reconcile.SummonsLimit, SummonsHeld: 200 - reconcile.SummonsLimit}, answers)
	require.Len(t, summonses(), reconcile.SummonsLimit)
	var reports int
	for _, ev := range h.events("lab-c") {
		if ev.Action == ReportActionPrefix+"push-failed" {
			reports++
		}
	}
	require.Equal(t, 200, reports, "every report is the reporter's fact, recorded")

	// Another spore is not held back by lab-c.
	r := h.do("lab-a", http.MethodPost, "/api/mycologist/report", map[string]any{"kind": "deploy", "failed": true, "text": "helm upgrade timed out"})
	require.Equal(t, http.StatusCreated, r.status, "answer: %s", r.body)
	var rep ReportResponse
	r.decode(t, &rep)
	require.Equal(t, SummonsRaised, rep.Summons)
	got := summonses()
	require.Len(t, got, reconcile.SummonsLimit+1)
	require.Contains(t, got[len(got)-1].Text, "Failed deploy: spore lab-a")

	// A window later, lab-c's next failed report raises one summons that
	// counts the 195 held and itself.
	h.ahead.Store(int64(reconcile.SummonsPer + time.Second))
	r = h.do("lab-c", http.MethodPost, "/api/mycologist/report", map[string]any{"kind": "push", "failed": true, "text": "push 200 rejected"})
	require.Equal(t, http.StatusCreated, r.status, "answer: %s", r.body)
	r.decode(t, &rep)
	require.Equal(t, SummonsRaised, rep.Summons)
	got = summonses()
	require.Len(t, got, reconcile.SummonsLimit+2)
	require.Contains(t, got[len(got)-1].Text, "Spore lab-c: 196 failed pushes since ")
	require.Contains(t, got[len(got)-1].Text, `it reported "push 200 rejected"`)
}
