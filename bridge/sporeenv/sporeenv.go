// Package sporeenv names the environment a spore's processes are started
// with: the contract between the runtimes, which set it (kube, local), and
// what runs inside the spore, which reads it (`sporectl bridge`, the
// mycologist and swarm commands). The names are spelled here only
// (docs/mycologists.md "The environment of a spore").
//
// It imports nothing, so every side of the contract can use it: a name
// kept in the API package would make the runtimes import the API, one
// kept in a runtime would make the bridge import a runtime.
package sporeenv

const (
	// SporeID is the spore's id. The local runtime also finds a spore's
	// processes by it (with HOME): it is their ownership mark.
	SporeID = "SPORECTL_SPORE_ID"
	// APIURL is the address of `sporectl serve`, http(s)://host:port.
	APIURL = "SPORECTL_API_URL"
	// APIToken is the spore's token for serve; when unset the commands
	// read it from the home.
	APIToken = "SPORECTL_API_TOKEN"
	// BridgeAddr is the address the bridge serves on (kube).
	BridgeAddr = "SPORECTL_BRIDGE_ADDR"
	// BridgeToken is the bearer token the bridge requires; never passed
	// on to the agent.
	BridgeToken = "SPORECTL_BRIDGE_TOKEN"
	// Identity is what the spore's agent is told of itself, handed to
	// Claude Code as --append-system-prompt.
	Identity = "SPORECTL_IDENTITY"
	// ClaudeBin names the claude executable the bridge runs when
	// --claude-bin is not given.
	ClaudeBin = "SPORECTL_CLAUDE_BIN"
)
