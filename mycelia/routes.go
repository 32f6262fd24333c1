package mycelia

import (
	"net/http"
	"strings"

	"github.com/sporectl/sporectl/state"
)

// route is one row of the API. The server is built from routes and from
// nothing else, and the security matrix test iterates the same slice: a
// route without its row in the matrix fails the test.
type route struct {
	// name names the route in logs and in the matrix.
	name   string
	method string
	// path is matched segment by segment; "{id}" (or "{name}") matches
	// one segment, handed to the handler as call.id.
	path string
	// public routes need no token (only /healthz).
	public bool
	// ranks may call the route; any other rank is refused with 403
	// before the body is read. Reach is checked by the handler, from the
	// store.
	ranks  []state.Rank
	handle func(s *Server, c *call) (int, any, error)
}

var (
	allRanks    = []state.Rank{state.RankSpore, state.RankSwarm, state.RankColony, state.RankArch}
	mycologists = []state.Rank{state.RankSwarm, state.RankColony, state.RankArch}
	archOnly    = []state.Rank{state.RankArch}
)

// routes is the API (docs/mycologists.md "Routes").
var routes = []route{
	{name: "healthz", method: http.MethodGet, path: "/healthz", public: true, handle: (*Server).healthz},
	{name: "summons", method: http.MethodPost, path: "/api/mycologist/summons", ranks: []state.Rank{state.RankSpore, state.RankSwarm, state.RankColony}, handle: (*Server).summons},
	{name: "tell", method: http.MethodPost, path: "/spores/{id}/prompt", ranks: mycologists, handle: (*Server).tell},
	{name: "spores", method: http.MethodGet, path: "/api/spores", ranks: mycologists, handle: (*Server).spores},
	{name: "spore", method: http.MethodGet, path: "/api/spores/{id}", ranks: mycologists, handle: (*Server).spore},
	{name: "swarm-tell", method: http.MethodPost, path: "/api/swarm/tell", ranks: allRanks, handle: (*Server).swarmTell},
	{name: "collisions", method: http.MethodGet, path: "/api/mycologist/collisions", ranks: mycologists, handle: (*Server).collisions},
	{name: "deploys", method: http.MethodGet, path: "/api/mycologist/deploys", ranks: mycologists, handle: (*Server).deploys},
	{name: "report", method: http.MethodPost, path: "/api/mycologist/report", ranks: allRanks, handle: (*Server).report},
	{name: "swarm-loop", method: http.MethodPost, path: "/api/swarm/loop", ranks: []state.Rank{state.RankSwarm}, handle: (*Server).swarmLoop},
	{name: "swarm-compact", method: http.MethodPost, path: "/api/swarm/compact", ranks: []state.Rank{state.RankSwarm}, handle: (*Server).swarmCompact},
	{name: "hosts", method: http.MethodGet, path: "/api/mycologist/hosts", ranks: archOnly, handle: (*Server).hosts},
	{name: "host-logs", method: http.MethodGet, path: "/api/mycologist/hosts/{name}/logs", ranks: archOnly, handle: (*Server).hostLogs},
}

// allows reports whether rank may call rt.
func (rt *route) allows(rank state.Rank) bool {
	for _, r := range rt.ranks {
		if r == rank {
			return true
		}
	}
	return false
}

// match finds the route of method and path, and its {id} segment. An
// unknown path, or a known one with another method, is no route: both
// are 404 without detail.
func match(method, path string) (*route, string) {
	segs := strings.Split(path, "/")
	for i := range routes {
		rt := &routes[i]
		if rt.method != method {
			continue
		}
		want := strings.Split(rt.path, "/")
		if len(want) != len(segs) {
			continue
		}
		id, ok := "", true
		for j, w := range want {
			switch {
			case (w == "{id}" || w == "{name}") && segs[j] != "":
				id = segs[j]
			case w != segs[j]:
				ok = false
			}
			if !ok {
				break
			}
		}
		if ok {
			return rt, id
		}
	}
	return nil, ""
}
