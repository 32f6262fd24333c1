package incident

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sporectl/sporectl/state"
)

// Incident keys name an incident the same way whichever pass derives it
// and whenever, so a summons is raised once (state.Spore.Incidents):
//
//   - a collision: "collision:" + its spores' ids, sorted, joined by ","
//     + ":" + the file's path. A third spore editing the same file is a
//     new incident (new key); more edits by the same spores are not.
//   - a failed push or deploy: "failed:" + the spore's id + ":" + the seq
//     of the event that holds it (the Bash tool call, or the report).
//
// A key that would be longer than state.MaxIncidentKey, or would hold a
// control character or invalid UTF-8 (a path is whatever the tool got),
// is instead the prefix + "sha256:" + the hex digest of the readable key.

// CollisionKey is c's key. c.Spores must be sorted by id, as Collisions
// returns them.
func CollisionKey(c Collision) string {
	ids := make([]string, len(c.Spores))
	for i, fe := range c.Spores {
		ids[i] = fe.ID
	}
	return bounded("collision:", strings.Join(ids, ",")+":"+c.Path)
}

// DeployKey is a failed deploy's (or push's) key.
func DeployKey(d Deploy) string {
	return bounded("failed:", fmt.Sprintf("%s:%d", d.Spore, d.Seq))
}

func bounded(prefix, rest string) string {
	k := prefix + rest
	if len(k) <= state.MaxIncidentKey && plain(k) {
		return k
	}
	sum := sha256.Sum256([]byte(rest))
	return prefix + "sha256:" + hex.EncodeToString(sum[:])
}

// plain reports whether s is valid UTF-8 without control characters (the
// store refuses other keys).
func plain(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}
