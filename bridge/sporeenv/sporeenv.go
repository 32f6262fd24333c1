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
	// BridgePrestart, "false", stops the bridge from keeping the next
	// turn's Claude Code started and waiting for its prompt when
	// --prestart is not given (docs/bridge.md).
	BridgePrestart = "SPORECTL_BRIDGE_PRESTART"
	// ModelURL is the base URL of serve's model gateway (the API URL and
	// "/model"), set by the runtimes when the store's gateway is on. The
	// bridge then gives its agent that as ANTHROPIC_BASE_URL, the spore's
	// id and API token as its key, and no other model credential; unset,
	// the agent reaches the model with what it inherits (direct mode).
	ModelURL = "SPORECTL_MODEL_URL"
)

// ModelPath is where, under serve's API URL, the model gateway answers:
// the runtimes set ModelURL to the API URL and ModelPath.
const ModelPath = "/model"

// APITokenFile is where, under the spore's home, the local runtime writes
// the spore's API token, and where the bridge and the in-pod commands
// read it when APIToken is not set.
const APITokenFile = ".sporectl-bridge/api-token"
