// Package server is the bridge that runs inside a spore next to its agent:
// it feeds queued prompts to the agent one turn at a time on one pinned
// session, numbers every line the agent writes into the event log, and
// serves the HTTP contract of docs/bridge.md.
//
// Everything it must not forget lives in the spore's home, under
// .sporectl-bridge/: the event log (bridge/eventlog), the prompt queue
// journal, the session id, and optionally the token. Only the step in
// flight is lost when the bridge or the agent dies; the prompt it belonged
// to runs again. The package never logs, returns or hands the agent the
// bearer token.
//
// Run serves HTTP defensively: the token is checked on a request's headers
// before any of its body is read (a request without it is answered 401 and
// its connection closed), headers, bodies and answers have time limits,
// and the connections held are capped (connLimiter), so slow or idle
// clients cannot exhaust the bridge nor keep /healthz from answering.
package server
