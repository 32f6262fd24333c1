package mycelia

import (
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// Route is one row of the API: everything about a route that more than
// one place needs, written once. The server registers the rows on a
// ServeMux and nothing else; the client calls by row (no path of its
// own); Identity lists the rows a spore's rank may call; the in-pod
// commands take their usage and help from their row; the security matrix
// test iterates the rows and derives the refusal of every rank a row does
// not name.
type Route struct {
	// Name names the route in logs and in the matrix.
	Name   string
	Method string
	// Pattern is the path as a ServeMux (Go 1.22) pattern. Its one
	// wildcard, if any ("{id}" or "{name}"), is handed to the handler as
	// call.id, unchecked.
	Pattern string
	// Public routes need no token (only /healthz).
	Public bool
	// Ranks may call the route; any other rank is refused with 403
	// before the body is read. Reach is checked by the handler, from the
	// store.
	Ranks []state.Rank
	// InSwarm: only a caller in a swarm has anyone to reach (the handler
	// refuses the others), so Identity lists it only to them.
	InSwarm bool
	// Request and Response are zero values of the body's and the
	// answer's types (Request nil: no body). The client refuses to send
	// or read another type; the matrix test decodes every answer strictly
	// into Response.
	Request, Response any
	// Command is the in-pod command that calls the route ("mycologist
	// tell"; "" for none), Args its arguments as its usage shows them,
	// Short its one line of help (the agent's too, in Identity) and Long
	// the rest of its help.
	Command, Args, Short, Long string

	handle func(s *Server, c *call) (int, any, error)
	// wildcard is the name of Pattern's wildcard ("" for none).
	wildcard string
}

var (
	allRanks    = []state.Rank{state.RankSpore, state.RankSwarm, state.RankColony, state.RankArch}
	mycologists = []state.Rank{state.RankSwarm, state.RankColony, state.RankArch}
	archOnly    = []state.Rank{state.RankArch}
	swarmOnly   = []state.Rank{state.RankSwarm}
)

// The rows (docs/mycologists.md "Routes"), in the order Identity lists
// their commands.
var (
	RouteHealthz = &Route{Name: "healthz", Method: http.MethodGet, Pattern: "/healthz", Public: true,
		Response: map[string]bool{}, handle: (*Server).healthz}

	RouteSummons = &Route{Name: "summons", Method: http.MethodPost, Pattern: "/api/mycologist/summons",
		Ranks: []state.Rank{state.RankSpore, state.RankSwarm, state.RankColony}, Request: AskRequest{}, Response: SendResponse{},
		Command: "mycologist ask", Args: "TEXT|-", Short: "Summon the mycologist one rank up (waking it) with a short request",
		Long: `Summon the mycologist one rank up: a spore's (or a [swarm] mycologist's) colony
mycologist, or the [arch] when the colony has none; a [colony] mycologist's
[arch]. It is woken if it sleeps, and gets a prompt marked with your id that
carries TEXT and tells it how to read your conversation; keep TEXT short.
TEXT "-" reads it from standard input.`,
		handle: (*Server).summons}

	RouteSpores = &Route{Name: "spores", Method: http.MethodGet, Pattern: "/api/spores",
		Ranks: mycologists, Response: SporeList{},
		Command: "mycologist spores", Short: "List the spores in your reach with their effective health and last activity",
		handle: (*Server).spores}

	RouteSpore = &Route{Name: "spore", Method: http.MethodGet, Pattern: "/api/spores/{id}",
		Ranks: mycologists, Response: SporeTurns{},
		Command: "mycologist spore", Args: "ID", Short: "Print the last turns of a spore in your reach, from the store (works while it sleeps)",
		handle: (*Server).spore}

	RouteTell = &Route{Name: "tell", Method: http.MethodPost, Pattern: "/spores/{id}/prompt",
		Ranks: mycologists, Request: TellRequest{}, Response: SendResponse{},
		Command: "mycologist tell", Args: "ID TEXT|-", Short: "Tell a spore below you in reach: queued if it is working, refused if asleep unless --wake",
		Long: `Send TEXT to spore ID, which must be below you in your reach. It arrives as a
prompt marked with your rank ("[from the [colony] mycologist] …"). A working
spore's bridge queues it; a sleeping spore is refused (exit 10) unless --wake.
serve checks the address first: a message that looks meant for another spore
(a small model decides, or, without a key, whether it names another spore of
your reach and not ID) is refused (exit 5, naming that spore) unless --force.
TEXT "-" reads it from standard input.`,
		handle: (*Server).tell}

	RouteCollisions = &Route{Name: "collisions", Method: http.MethodGet, Pattern: "/api/mycologist/collisions",
		Ranks: mycologists, Response: CollisionList{},
		Command: "mycologist collisions", Short: "Files that several spores in your reach edited recently (from their ingested tool calls)",
		Long: `List the files that two or more spores in your reach edited (Edit, Write,
MultiEdit, NotebookEdit) within --window, from the tool calls in the store, so
sleeping spores count too. Paths are relative to each spore's working directory.`,
		handle: (*Server).collisions}

	RouteDeploys = &Route{Name: "deploys", Method: http.MethodGet, Pattern: "/api/mycologist/deploys",
		Ranks: mycologists, Response: DeployList{},
		Command: "mycologist deploys", Short: "Who pushed and deployed recently in your reach (tool calls and reports)",
		Long: `List the pushes and deploys of the spores in your reach within --window: Bash
calls matching git push or a deploy command (see "Mycologists and swarms" in the docs), with FAILED
when the call's result was an error, and what spores reported with
` + "`mycologist report`.",
		handle: (*Server).deploys}

	RouteReport = &Route{Name: "report", Method: http.MethodPost, Pattern: "/api/mycologist/report",
		Ranks: allRanks, Request: ReportRequest{}, Response: ReportResponse{},
		Command: "mycologist report", Args: "push|deploy TEXT|-", Short: "Report that you pushed or deployed (or failed to, with --failed)",
		Long: `Record in your own log that you pushed or deployed (--failed: tried and
failed), with TEXT saying what; your mycologists see it in ` + "`mycologist deploys`" + `.
TEXT "-" reads it from standard input.`,
		handle: (*Server).report}

	RouteHosts = &Route{Name: "hosts", Method: http.MethodGet, Pattern: "/api/mycologist/hosts",
		Ranks: archOnly, Response: reconcile.HostList{},
		Command: "mycologist hosts", Short: "[arch] only: sporectl's own pods (or local processes) with state, CPU, memory and restarts",
		Long: `List sporectl's own pods (kube) or process trees (local): state, restarts, and
CPU and memory when known. On kube, CPU is cores in use now and memory the
working set, from the metrics API (metrics.k8s.io) when the cluster has one;
otherwise the answer says it is absent. On the local runtime, CPU is the CPU
time each tree used since it started (not a rate) and memory its resident set.
Only the [arch] mycologist may call it.`,
		handle: (*Server).hosts}

	RouteHostLogs = &Route{Name: "host-logs", Method: http.MethodGet, Pattern: "/api/mycologist/hosts/{name}/logs",
		Ranks: archOnly, Response: HostLogs{},
		Command: "mycologist host-logs", Args: "[POD]", Short: "[arch] only: the last lines of the runtime log of one of sporectl's pods (default: your own)",
		Long: `Print the last --tail lines of the runtime log (not the conversation) of POD:
a name from ` + "`mycologist hosts`" + ` (a pod's name on kube, "bridge of ID" locally) or
a spore id. Without POD, your own. Only the [arch] mycologist may call it; a
name that is not one of sporectl's is not found (exit 4).`,
		handle: (*Server).hostLogs}

	RouteSwarmTell = &Route{Name: "swarm-tell", Method: http.MethodPost, Pattern: "/api/swarm/tell",
		Ranks: allRanks, InSwarm: true, Request: SwarmTellRequest{}, Response: SendResponse{},
		Command: "swarm tell", Args: "ROLE TEXT|-", Short: "Tell the teammate with ROLE: queued if working, refused if a person put it to sleep",
		Long: `Send TEXT to the spore of your swarm whose role is ROLE. It arrives as a prompt
marked "[from swarm teammate YOUR-ROLE]" that says how to answer. A working
teammate's bridge queues it. A sleeping teammate is woken only if idle put it
to sleep and its colony wakes on a message; one a person put to sleep is
refused as asleep (exit 10): ask your mycologist. TEXT "-" reads stdin.`,
		handle: (*Server).swarmTell}

	RouteSwarmLoop = &Route{Name: "swarm-loop", Method: http.MethodPost, Pattern: "/api/swarm/loop",
		Ranks: swarmOnly, InSwarm: true, Request: LoopRequest{}, Response: LoopResponse{},
		Command: "swarm loop", Args: "EVERY | loop --stop", Short: "Be prompted every EVERY (1m to 24h) to check on your swarm ([swarm] mycologist only)",
		Long: `Record a loop on your own spore: every EVERY (a duration such as 30m, from 1m
to 24h) reconcile sends you a prompt marked "[from swarm loop]" to check on
your swarm and steer it. A due time missed (you slept, no reconcile ran)
gives one prompt, not a burst. Running it again changes the interval;
--stop ends the loop. Only the [swarm] mycologist may.`,
		handle: (*Server).swarmLoop}

	RouteSwarmCompact = &Route{Name: "swarm-compact", Method: http.MethodPost, Pattern: "/api/swarm/compact",
		Ranks: swarmOnly, InSwarm: true, Request: CompactRequest{}, Response: CompactResponse{},
		Command: "swarm compact", Args: "ROLE", Short: "Compact the context of the teammate with ROLE ([swarm] mycologist only)",
		Long: `Ask the bridge of the teammate whose role is ROLE to compact its agent's
context (/compact, queued behind the prompts it holds). Only the [swarm]
mycologist may; the teammate must be awake.`,
		handle: (*Server).swarmCompact}
)

// Routes is the API, every row once.
var Routes = []*Route{RouteHealthz, RouteSummons, RouteSpores, RouteSpore, RouteTell, RouteCollisions, RouteDeploys,
	RouteReport, RouteHosts, RouteHostLogs, RouteSwarmTell, RouteSwarmLoop, RouteSwarmCompact}

func init() {
	for _, rt := range Routes {
		if i := strings.IndexByte(rt.Pattern, '{'); i >= 0 {
			rt.wildcard = strings.TrimSuffix(strings.SplitN(rt.Pattern[i+1:], "}", 2)[0], "...")
		}
	}
}

// Allows reports whether rank may call rt.
func (rt *Route) Allows(rank state.Rank) bool {
	for _, r := range rt.Ranks {
		if r == rank {
			return true
		}
	}
	return false
}

// sends reports whether rt sends a message (its answer is a
// SendResponse): what Server.Metrics counts.
func (rt *Route) sends() bool {
	_, ok := rt.Response.(SendResponse)
	return ok
}

// For reports whether sp may call rt: its rank, and its swarm when rt
// needs one.
func (rt *Route) For(sp state.Spore) bool {
	return rt.Allows(sp.Rank) && (!rt.InSwarm || sp.Swarm != "")
}

// Use is the command's usage line: its verb and its arguments.
func (rt *Route) Use() string {
	verb := rt.Command[strings.LastIndexByte(rt.Command, ' ')+1:]
	if rt.Args == "" {
		return verb
	}
	return verb + " " + rt.Args
}

// path is rt's path with its wildcard set to arg (unescaped: the URL
// escapes it when sent).
func (rt *Route) path(args ...string) string {
	if rt.wildcard == "" {
		return rt.Pattern
	}
	return strings.Replace(rt.Pattern, "{"+rt.wildcard+"}", strings.Join(args, ""), 1)
}

// pattern is rt's ServeMux pattern: its method and path.
func (rt *Route) pattern() string { return rt.Method + " " + rt.Pattern }

// Register puts the API's routes on m, with a catch-all "/" that answers
// 404 without detail: an unknown path, and a known one with another
// method (HEAD of a GET route included), are no route. serve registers
// the page (mycelia/ui) on the same mux.
func (s *Server) Register(m *http.ServeMux) {
	for _, rt := range Routes {
		m.Handle(rt.pattern(), s.handler(rt))
	}
	m.Handle("/", s.handler(nil))
}

// Canonical wraps m, which holds the API's routes, so that a path that is
// not canonical ("//", "/./", "/../", which a ServeMux answers with a
// redirect to the cleaned path) is no route either: 404 without detail,
// as for any unknown path. Paths under except (the page's, "" for none)
// are m's to answer.
func (s *Server) Canonical(m http.Handler, except string) http.Handler {
	notFound := s.handler(nil)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; !canonical(p) && (except == "" || !strings.HasPrefix(p, except)) {
			notFound.ServeHTTP(w, r)
			return
		}
		m.ServeHTTP(w, r)
	})
}

// canonical reports whether a ServeMux takes p as it is (no redirect).
func canonical(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c == p
}

// routeURL is the client's URL of rt: base, the path with its wildcard
// set, and q.
func routeURL(base url.URL, rt *Route, q url.Values, args ...string) string {
	base.Path += rt.path(args...)
	base.RawQuery = q.Encode()
	return base.String()
}
