// Package bridge is the client side of a spore's bridge: the wire types of
// its HTTP contract (docs/bridge.md) and a typed, context-aware Client that
// the rest of sporectl uses to prompt a spore, read its numbered events,
// and ask for its status.
//
// The server lives in bridge/server, the numbered log in bridge/eventlog,
// and the reading of Claude Code's lines in bridge/streamjson. This package
// holds no state and must never log or return the bearer token.
package bridge
