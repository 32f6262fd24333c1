package mycelia

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/internal/strictjson"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// The security matrix: every route × every rank × in reach and out of
// reach, generated from the rows (Routes). The test iterates the rows, so
// a route added without its row here fails it, and a row without its
// route does too; the refusal of every rank a row does not allow is
// derived from the row's Ranks (cellOf), so the matrix says only what the
// allowed ranks get.

// cell is what one caller's request must get, and what must follow.
type cell struct {
	status int
	// check looks at the answer and at what the store and bridges saw.
	check func(t *testing.T, h *harness, r response)
}

// matrixRow builds a route's request for a caller, reaching in or out,
// and says what each rank gets.
type matrixRow struct {
	// setup, when set, adds to the colony before the request (not
	// counted as the request's writes).
	setup   func(h *harness)
	request func(caller string, in bool) (path string, body any)
	// in and out are the cells by rank, reaching in and out of reach.
	in, out map[state.Rank]cell
}

// denied is a refusal: the status, and nothing written anywhere.
func denied(status int) cell { return cell{status: status} }

// allRanksGet is the same cell for every rank.
func allRanksGet(c cell) map[state.Rank]cell { return sameFor(c, allRanks...) }

// sameFor is the same cell for each of ranks.
func sameFor(c cell, ranks ...state.Rank) map[state.Rank]cell {
	m := map[state.Rank]cell{}
	for _, r := range ranks {
		m[r] = c
	}
	return m
}

// cellOf is what rank gets from rt, reaching in or out: the row's cell
// for a rank rt allows, and for every other rank the refusal its row's
// Ranks imply (403 before the body is read), derived here and never
// written in the matrix (TestSecurityMatrix refuses a row that does).
func cellOf(rt *Route, row matrixRow, rank state.Rank, in bool) cell {
	if !rt.Public && !rt.Allows(rank) {
		return denied(http.StatusForbidden)
	}
	if in {
		return row.in[rank]
	}
	return row.out[rank]
}

// messageTo checks a 202 whose message landed, once, in to's log (and
// nowhere else), marked as the route marks it.
func messageTo(to, marker string) cell {
	return cell{status: http.StatusAccepted, check: func(t *testing.T, h *harness, r response) {
		var res SendResponse
		r.decode(t, &res)
		require.Equal(t, to, res.To)
		for id := range h.tokens {
			msgs := h.messages(id)
			if id != to {
				require.Empty(t, msgs, "a message landed in %s", id)
				continue
			}
			require.Len(t, msgs, 1)
			require.True(t, strings.HasPrefix(msgs[0].Text, marker), "message %q does not start with %q", msgs[0].Text, marker)
			require.Equal(t, res.ID, msgs[0].Action)
		}
		if h.spore(to).Desired == state.Running && res.State == Delivered {
			p := h.prompts(to)
			require.Len(t, p, 1)
			require.Equal(t, res.ID, p[0].ID)
		}
	}}
}

// listing checks a 200 list that holds want and none of not.
func listing(want, not []string) cell {
	return cell{status: http.StatusOK, check: func(t *testing.T, h *harness, r response) {
		var l SporeList
		r.decode(t, &l)
		var ids []string
		for _, s := range l.Spores {
			ids = append(ids, s.ID)
		}
		for _, id := range want {
			require.Contains(t, ids, id)
		}
		for _, id := range not {
			require.NotContains(t, ids, id)
		}
	}}
}

// turnsOf checks a 200 with id's conversation.
func turnsOf(id string) cell {
	return cell{status: http.StatusOK, check: func(t *testing.T, h *harness, r response) {
		var st SporeTurns
		r.decode(t, &st)
		require.Equal(t, id, st.ID)
		require.Contains(t, st.Text, "hello "+id)
	}}
}

// collided checks a 200 whose repo/shared.go was edited by want and by
// none of not, and which lists no file edited by one spore only.
func collided(want, not []string) cell {
	return cell{status: http.StatusOK, check: func(t *testing.T, h *harness, r response) {
		var l CollisionList
		r.decode(t, &l)
		var ids []string
		for _, f := range l.Files {
			require.Greater(t, len(f.Spores), 1, "file %s", f.Path)
			require.NotEqual(t, "repo/only-a.go", f.Path)
			for _, e := range f.Spores {
				ids = append(ids, e.ID)
			}
		}
		for _, id := range want {
			require.Contains(t, ids, id)
		}
		for _, id := range not {
			require.NotContains(t, ids, id)
		}
	}}
}

// deployed checks a 200 listing pushes of want and none of not.
func deployed(want, not []string) cell {
	return cell{status: http.StatusOK, check: func(t *testing.T, h *harness, r response) {
		var l DeployList
		r.decode(t, &l)
		var ids []string
		for _, d := range l.Deploys {
			ids = append(ids, d.Spore)
		}
		for _, id := range want {
			require.Contains(t, ids, id)
		}
		for _, id := range not {
			require.NotContains(t, ids, id)
		}
	}}
}

// reported checks a 201 whose report is in the caller's own log.
func reported(caller string) cell {
	return cell{status: http.StatusCreated, check: func(t *testing.T, h *harness, r response) {
		var res ReportResponse
		r.decode(t, &res)
		require.Equal(t, caller, res.Spore)
		evs := h.events(caller)
		last := evs[len(evs)-1]
		require.Equal(t, "report-deploy-failed", last.Action)
		require.Equal(t, "spore:"+caller, last.From)
		require.Equal(t, res.Seq, last.Seq)
		for id := range h.tokens {
			if id != caller {
				for _, ev := range h.events(id) {
					require.NotContains(t, ev.Action, "report", "a report landed in %s", id)
				}
			}
		}
	}}
}

// everyoneEdits: every spore of the colony edited repo/shared.go and
// pushed; lab-a also edited a file of its own.
func everyoneEdits(h *harness) {
	for id := range h.tokens {
		h.agentLines(id, initLine("/home/spore"), toolUseLine("t-"+id, "Edit", map[string]string{"file_path": "/home/spore/repo/shared.go"}),
			toolUseLine("p-"+id, "Bash", map[string]string{"command": "git push origin main"}))
	}
	h.agentLines("lab-a", toolUseLine("t-only", "Write", map[string]string{"file_path": "/home/spore/repo/only-a.go"}))
}

var matrix = map[string]matrixRow{
	"healthz": {
		request: func(string, bool) (string, any) { return "/healthz", nil },
		in:      allRanksGet(cell{status: http.StatusOK}),
		out:     allRanksGet(cell{status: http.StatusOK}),
	},
	"summons": {
		// Out of reach: the caller names a target of its own choosing;
		// the target is never the caller's to choose.
		request: func(_ string, in bool) (string, any) {
			if in {
				return "/api/mycologist/summons", map[string]any{"text": "please look at my failing test"}
			}
			return "/api/mycologist/summons", map[string]any{"text": "please look", "to": "far-myco"}
		},
		in: map[state.Rank]cell{
			state.RankSpore:  messageTo("lab-myco", "[from spore lab-a]\nplease look at my failing test"),
			state.RankSwarm:  messageTo("lab-myco", "[from the [swarm] mycologist lab-lead of colony lab]\n"),
			state.RankColony: messageTo("arch", "[from the [colony] mycologist lab-myco of colony lab]\n"),
		},
		out: map[state.Rank]cell{
			state.RankSpore:  denied(http.StatusBadRequest),
			state.RankSwarm:  denied(http.StatusBadRequest),
			state.RankColony: denied(http.StatusBadRequest),
		},
	},
	"tell": {
		request: func(caller string, in bool) (string, any) {
			return "/spores/" + tellTarget(caller, in) + "/prompt", map[string]any{"text": "how is it going?"}
		},
		in: map[state.Rank]cell{
			state.RankSwarm:  messageTo("lab-a", "[from the [swarm] mycologist]\nhow is it going?"),
			state.RankColony: messageTo("lab-a", "[from the [colony] mycologist]\nhow is it going?"),
			state.RankArch:   messageTo("far-x", "[from the [arch] mycologist]\nhow is it going?"),
		},
		out: sameFor(denied(http.StatusForbidden), mycologists...),
	},
	"spores": {
		// One request either way: reaching out is what the list leaves out.
		request: func(string, bool) (string, any) { return "/api/spores", nil },
		in: map[state.Rank]cell{
			state.RankSwarm:  listing([]string{"lab-a", "lab-b"}, nil),
			state.RankColony: listing([]string{"lab-a", "lab-b", "lab-c", "lab-lead"}, nil),
			state.RankArch:   listing([]string{"lab-a", "lab-myco", "far-myco", "far-x", "lab-lead"}, nil),
		},
		out: map[state.Rank]cell{
			state.RankSwarm:  listing(nil, []string{"lab-c", "far-x", "lab-myco", "arch", "lab-lead"}),
			state.RankColony: listing(nil, []string{"far-x", "far-myco", "arch", "lab-myco"}),
			state.RankArch:   listing(nil, []string{"arch"}),
		},
	},
	"spore": {
		request: func(caller string, in bool) (string, any) {
			return "/api/spores/" + tellTarget(caller, in) + "?turns=2", nil
		},
		in: map[state.Rank]cell{
			state.RankSwarm:  turnsOf("lab-a"),
			state.RankColony: turnsOf("lab-a"),
			state.RankArch:   turnsOf("far-x"),
		},
		out: sameFor(denied(http.StatusForbidden), mycologists...),
	},
	"swarm-tell": {
		// lab-b is awake: a swarm tell does not wake a teammate a person
		// put to sleep (idle_test.go).
		setup: func(h *harness) { h.setDesired("lab-b", state.Running) },
		request: func(_ string, in bool) (string, any) {
			role := "tester"
			if !in {
				role = "scout" // far-x: the same swarm name in another colony
			}
			return "/api/swarm/tell", map[string]any{"role": role, "text": "your turn"}
		},
		in: map[state.Rank]cell{
			state.RankSpore:  messageTo("lab-b", "[from swarm teammate coder]\nyour turn"),
			state.RankSwarm:  messageTo("lab-b", "[from swarm teammate lead]\nyour turn"),
			state.RankColony: denied(http.StatusForbidden),
			state.RankArch:   denied(http.StatusForbidden),
		},
		out: map[state.Rank]cell{
			state.RankSpore:  denied(http.StatusNotFound),
			state.RankSwarm:  denied(http.StatusNotFound),
			state.RankColony: denied(http.StatusForbidden),
			state.RankArch:   denied(http.StatusForbidden),
		},
	},
	"collisions": {
		setup:   everyoneEdits,
		request: func(string, bool) (string, any) { return "/api/mycologist/collisions?window=1h", nil },
		in: map[state.Rank]cell{
			state.RankSwarm:  collided([]string{"lab-a", "lab-b"}, nil),
			state.RankColony: collided([]string{"lab-a", "lab-b", "lab-c", "lab-lead"}, nil),
			state.RankArch:   collided([]string{"lab-a", "far-x", "far-myco", "lab-myco"}, nil),
		},
		out: map[state.Rank]cell{
			state.RankSwarm:  collided(nil, []string{"lab-c", "far-x", "lab-myco", "arch", "lab-lead"}),
			state.RankColony: collided(nil, []string{"far-x", "far-myco", "arch", "lab-myco"}),
			state.RankArch:   collided(nil, []string{"arch"}),
		},
	},
	"deploys": {
		setup:   everyoneEdits,
		request: func(string, bool) (string, any) { return "/api/mycologist/deploys", nil },
		in: map[state.Rank]cell{
			state.RankSwarm:  deployed([]string{"lab-a", "lab-b"}, nil),
			state.RankColony: deployed([]string{"lab-a", "lab-b", "lab-c", "lab-lead"}, nil),
			state.RankArch:   deployed([]string{"lab-a", "far-x", "far-myco", "lab-myco"}, nil),
		},
		out: map[state.Rank]cell{
			state.RankSwarm:  deployed(nil, []string{"lab-c", "far-x", "lab-myco", "arch", "lab-lead"}),
			state.RankColony: deployed(nil, []string{"far-x", "far-myco", "arch", "lab-myco"}),
			state.RankArch:   deployed(nil, []string{"arch"}),
		},
	},
	"report": {
		// Out of reach: a report names no one but its reporter; a body
		// naming another spore is refused.
		request: func(_ string, in bool) (string, any) {
			if in {
				return "/api/mycologist/report", map[string]any{"kind": "deploy", "failed": true, "text": "kubectl apply failed"}
			}
			return "/api/mycologist/report", map[string]any{"kind": "deploy", "text": "x", "spore": "far-x"}
		},
		in: map[state.Rank]cell{
			state.RankSpore:  reported("lab-a"),
			state.RankSwarm:  reported("lab-lead"),
			state.RankColony: reported("lab-myco"),
			state.RankArch:   reported("arch"),
		},
		out: allRanksGet(denied(http.StatusBadRequest)),
	},
	"swarm-loop": {
		// Its own record only: a body naming another spore is refused.
		request: func(_ string, in bool) (string, any) {
			if in {
				return "/api/swarm/loop", map[string]any{"every": "30m"}
			}
			return "/api/swarm/loop", map[string]any{"every": "30m", "spore": "lab-a"}
		},
		in: map[state.Rank]cell{
			state.RankSwarm: {status: http.StatusOK, check: func(t *testing.T, h *harness, r response) {
				var res LoopResponse
				r.decode(t, &res)
				require.Equal(t, "lab-lead", res.Spore)
				require.Equal(t, "30m0s", res.Every)
				sp := h.spore("lab-lead")
				require.Equal(t, state.Duration(30*time.Minute), sp.Loop)
				require.True(t, sp.LoopDue.Equal(res.Due))
				require.Zero(t, h.spore("lab-a").Loop)
			}},
		},
		out: map[state.Rank]cell{
			state.RankSwarm: denied(http.StatusBadRequest),
		},
	},
	"swarm-compact": {
		request: func(_ string, in bool) (string, any) {
			if in {
				return "/api/swarm/compact", map[string]any{"role": "coder"}
			}
			return "/api/swarm/compact", map[string]any{"role": "scout"}
		},
		in: map[state.Rank]cell{
			state.RankSwarm: {status: http.StatusAccepted, check: func(t *testing.T, h *harness, r response) {
				var res CompactResponse
				r.decode(t, &res)
				require.Equal(t, "lab-a", res.To)
				require.EqualValues(t, 1, h.compactsOf("lab-a"))
				require.Equal(t, "/compact", h.prompts("lab-a")[0].Text)
			}},
		},
		out: map[state.Rank]cell{
			state.RankSwarm: denied(http.StatusNotFound),
		},
	},
	"hosts": {
		// The [arch] only; there is no target, so out of reach is the
		// same request: it lists sporectl's hosts and nothing else.
		request: func(string, bool) (string, any) { return "/api/mycologist/hosts", nil },
		in: map[state.Rank]cell{
			state.RankArch: hostsListed("arch", "lab-a", "far-x"),
		},
		out: map[state.Rank]cell{
			state.RankArch: hostsListed(),
		},
	},
	"host-logs": {
		// Out of reach: a name that is not one of sporectl's hosts.
		request: func(_ string, in bool) (string, any) {
			if in {
				return "/api/mycologist/hosts/bridge of far-x/logs?tail=2", nil
			}
			return "/api/mycologist/hosts/kube-apiserver/logs?tail=2", nil
		},
		in: map[state.Rank]cell{
			state.RankArch: {status: http.StatusOK, check: func(t *testing.T, h *harness, r response) {
				var l HostLogs
				r.decode(t, &l)
				require.Equal(t, HostLogs{Name: "bridge of far-x", Spore: "far-x", Tail: 2, Text: "two far-x\nthree far-x\n"}, l)
			}},
		},
		out: map[state.Rank]cell{
			state.RankArch: {status: http.StatusNotFound, check: func(t *testing.T, h *harness, r response) {
				require.JSONEq(t, `{"error":"not found","code":"not_found"}`, string(r.body))
			}},
		},
	},
}

// hostsListed checks a 200 list of hosts holding want's bridges, and
// only spores' hosts.
func hostsListed(want ...string) cell {
	return cell{status: http.StatusOK, check: func(t *testing.T, h *harness, r response) {
		var l reconcile.HostList
		r.decode(t, &l)
		require.NotEmpty(t, l.Metrics)
		var names []string
		for _, x := range l.Hosts {
			require.Equal(t, "bridge of "+x.Spore, x.Name)
			names = append(names, x.Name)
		}
		for _, id := range want {
			require.Contains(t, names, "bridge of "+id)
		}
	}}
}

// tellTarget is a spore below caller in its reach, or one outside it
// (for the [arch], which reaches every spore, one that does not exist:
// it must get the same answer, so that nobody learns what exists
// outside their reach).
func tellTarget(caller string, in bool) string {
	targets := map[string][2]string{
		"lab-a":    {"lab-b", "far-x"},   // a teammate, still not a spore's to tell
		"lab-lead": {"lab-a", "lab-c"},   // lab-c: its colony, not its swarm
		"lab-myco": {"lab-a", "far-x"},   // far-x: another colony
		"arch":     {"far-x", "no-such"}, // the arch sees every colony
	}
	if in {
		return targets[caller][0]
	}
	return targets[caller][1]
}

func TestSecurityMatrix(t *testing.T) {
	var names []string
	for _, rt := range Routes {
		names = append(names, rt.Name)
		row, ok := matrix[rt.Name]
		require.True(t, ok, "route %s %s (%s) has no row in the security matrix", rt.Method, rt.Pattern, rt.Name)
		for _, rank := range allRanks {
			allowed := rt.Public || rt.Allows(rank)
			for where, cells := range map[string]map[state.Rank]cell{"in reach": row.in, "out of reach": row.out} {
				_, has := cells[rank]
				require.Equal(t, allowed, has, "route %s, rank %s %s: a row gives a cell for exactly the ranks its route allows (the others' 403 is derived)", rt.Name, rank, where)
			}
		}
	}
	for name := range matrix {
		require.True(t, slices.Contains(names, name), "the matrix has a row for %s, which is no route", name)
	}

	mux := http.NewServeMux()
	(&Server{}).Register(mux)
	for _, rt := range Routes {
		row := matrix[rt.Name]
		for _, rank := range allRanks {
			for _, in := range []bool{true, false} {
				where, c := "in-reach", cellOf(rt, row, rank, in)
				if !in {
					where = "out-of-reach"
				}
				t.Run(fmt.Sprintf("%s/%s/%s", rt.Name, rank, where), func(t *testing.T) {
					h := newHarness(t).colony()
					if row.setup != nil {
						row.setup(h)
						h.st.updates.Store(0)
					}
					caller := callers[rank]
					path, body := row.request(caller, in)
					req, err := http.NewRequest(rt.Method, "http://serve"+path, nil)
					require.NoError(t, err)
					_, pattern := mux.Handler(req)
					require.Equal(t, rt.pattern(), pattern, "the row's request is not this route's")
					r := h.do(caller, rt.Method, path, body)
					require.Equal(t, c.status, r.status, "answer: %s", r.body)
					if c.status >= 400 {
						require.Zero(t, h.st.updates.Load(), "a refused request wrote to the store")
						for id := range h.tokens {
							require.Empty(t, h.messages(id), "a refused request sent a message to %s", id)
						}
						var e Error
						r.decode(t, &e)
						require.NotEmpty(t, e.Message)
						require.NotEmpty(t, e.Code)
					} else {
						// The row's types are the wire's: the answer decodes
						// strictly (no field the type lacks) into Response, and
						// the body the request sent into Request.
						require.NoError(t, strictjson.Decode(r.body, reflect.New(reflect.TypeOf(rt.Response)).Interface()), "answer: %s", r.body)
						if body != nil {
							require.NotNil(t, rt.Request, "the route takes a body")
							b, err := json.Marshal(body)
							require.NoError(t, err)
							require.NoError(t, strictjson.Decode(b, reflect.New(reflect.TypeOf(rt.Request)).Interface()))
						} else {
							require.Nil(t, rt.Request, "the route takes no body")
						}
					}
					if c.check != nil {
						c.check(t, h, r)
					}
				})
			}
		}
	}
}

// TestUnauthenticated: every route but /healthz answers 401, the same
// for every way of being wrong, and writes nothing.
func TestUnauthenticated(t *testing.T) {
	h := newHarness(t).colony()
	for _, rt := range Routes {
		if rt.Public {
			continue
		}
		path, body := matrix[rt.Name].request("lab-a", true)
		for name, hdr := range map[string][]string{
			"none":                {},
			"no spore header":     {"Authorization", "Bearer " + h.tokens["lab-a"]},
			"no token":            {HeaderSpore, "lab-a"},
			"wrong token":         {"Authorization", "Bearer spt_wrong", HeaderSpore, "lab-a"},
			"another's token":     {"Authorization", "Bearer " + h.tokens["lab-c"], HeaderSpore, "lab-a"},
			"a mycologist's id":   {"Authorization", "Bearer " + h.tokens["lab-a"], HeaderSpore, "lab-myco"},
			"unknown spore":       {"Authorization", "Bearer " + h.tokens["lab-a"], HeaderSpore, "ghost"},
			"invalid spore id":    {"Authorization", "Bearer " + h.tokens["lab-a"], HeaderSpore, "Lab A"},
			"basic auth":          {"Authorization", "Basic " + h.tokens["lab-a"], HeaderSpore, "lab-a"},
			"two spore headers":   {"Authorization", "Bearer " + h.tokens["lab-a"], HeaderSpore, "lab-a", HeaderSpore, "lab-myco"},
			"two tokens":          {"Authorization", "Bearer " + h.tokens["lab-a"], "Authorization", "Bearer " + h.tokens["lab-myco"], HeaderSpore, "lab-a"},
			"the hash as a token": {"Authorization", "Bearer " + string(state.HashToken(h.tokens["lab-a"])), HeaderSpore, "lab-a"},
		} {
			t.Run(rt.Name+"/"+name, func(t *testing.T) {
				r := h.do("", rt.Method, path, body, hdr...)
				require.Equal(t, http.StatusUnauthorized, r.status, "answer: %s", r.body)
				require.Contains(t, r.header.Get("WWW-Authenticate"), "Bearer")
				var e Error
				r.decode(t, &e)
				require.Equal(t, CodeUnauthorized, e.Code)
				require.Equal(t, "unauthorized: send Authorization: Bearer <token> and X-Sporectl-Spore: <spore id>", e.Message, "a 401 says nothing of what was wrong")
			})
		}
	}
	require.Zero(t, h.st.updates.Load())
	for id := range h.tokens {
		require.Empty(t, h.messages(id))
	}
}

// TestUnknownRoutes: 404 without detail, authenticated or not.
func TestUnknownRoutes(t *testing.T) {
	h := newHarness(t).colony()
	for _, c := range []struct{ method, path string }{
		{"GET", "/"}, {"GET", "/api"}, {"GET", "/api/nope"}, {"POST", "/api/spores"}, {"DELETE", "/api/spores/lab-b"},
		{"GET", "/spores/lab-b/prompt"}, {"POST", "/spores/lab-b/prompt/x"}, {"POST", "/spores//prompt"},
		{"GET", "/api/spores/lab-b/extra"}, {"GET", "/healthz/"}, {"POST", "/api/mycologist/summons/"},
		{"GET", "/ui/"}, {"POST", "/api/mycologist/hosts"}, {"GET", "/api/mycologist/hosts/"},
		{"GET", "/api/mycologist/hosts/arch"}, {"GET", "/api/mycologist/hosts//logs"}, {"GET", "/api/mycologist/hosts/arch/logs/x"},
		{"HEAD", "/api/spores"}, {"HEAD", "/healthz"}, {"GET", "/api/../api/spores"}, {"GET", "/api/./spores"},
	} {
		for _, caller := range []string{"", "arch"} {
			r := h.do(caller, c.method, c.path, nil)
			require.Equal(t, http.StatusNotFound, r.status, "%s %s", c.method, c.path)
			if c.method != "HEAD" {
				require.JSONEq(t, `{"error":"not found","code":"not_found"}`, string(r.body))
			}
		}
	}
	require.Zero(t, h.st.updates.Load())
}

// TestAsleepCallerIsRefused: the matrix's rows for a caller whose desired
// state is Paused or Stopped. On every route, with its right token, it
// gets 403 caller_asleep and nothing is written; with a wrong token the
// same 401 as anyone (authenticated first, refused after). Woken, it gets
// the matrix's answer again.
func TestAsleepCallerIsRefused(t *testing.T) {
	for _, rt := range Routes {
		if rt.Public {
			continue
		}
		row := matrix[rt.Name]
		for _, rank := range allRanks {
			for _, d := range []state.Desired{state.Paused, state.Stopped} {
				t.Run(fmt.Sprintf("%s/%s/%s", rt.Name, rank, d), func(t *testing.T) {
					h := newHarness(t).colony()
					if row.setup != nil {
						row.setup(h)
					}
					caller := callers[rank]
					h.setDesired(caller, d)
					h.st.updates.Store(0)
					path, body := row.request(caller, true)

					r := h.do(caller, rt.Method, path, body)
					require.Equal(t, http.StatusForbidden, r.status, "answer: %s", r.body)
					var e Error
					r.decode(t, &e)
					require.Equal(t, CodeCallerAsleep, e.Code)
					require.Contains(t, e.Message, fmt.Sprintf("spore %s is asleep (desired %s)", caller, d))
					wrong := h.do("", rt.Method, path, body, "Authorization", "Bearer spt_wrong", HeaderSpore, caller)
					require.Equal(t, http.StatusUnauthorized, wrong.status, "a wrong token learns nothing of the state: %s", wrong.body)
					require.NotContains(t, string(wrong.body), string(d))
					require.Zero(t, h.st.updates.Load(), "a refused caller wrote to the store")
					for id := range h.tokens {
						require.Empty(t, h.messages(id), "a refused caller sent a message to %s", id)
					}
					require.Zero(t, h.compactsOf("lab-a"))

					h.setDesired(caller, state.Running)
					h.st.updates.Store(0)
					c := cellOf(rt, row, rank, true)
					r = h.do(caller, rt.Method, path, body)
					require.Equal(t, c.status, r.status, "woken: %s", r.body)
					if c.check != nil {
						c.check(t, h, r)
					}
				})
			}
		}
	}
}
