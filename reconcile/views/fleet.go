package views

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

// fleetVersion is fleet.json's format version; it changes only when a
// field changes meaning or goes away (new fields may appear without it).
const fleetVersion = 1

// fleetFile is fleet.json (docs/views.md). It is spelled out here rather
// than taken from reconcile's JSON so that the file's format is this
// package's promise.
type fleetFile struct {
	Version int          `json:"version"`
	Spores  []fleetSpore `json:"spores"`
	Orphans []string     `json:"orphans"`
}

type fleetSpore struct {
	ID        string           `json:"id"`
	Colony    string           `json:"colony"`
	Rank      state.Rank       `json:"rank"`
	Swarm     string           `json:"swarm,omitempty"`
	Role      string           `json:"role,omitempty"`
	Desired   state.Desired    `json:"desired"`
	Observed  fleetObserved    `json:"observed"`
	Effective policy.Health    `json:"effective"`
	Reason    string           `json:"reason"`
	Code      reconcile.Reason `json:"code"`
	LastSeq   uint64           `json:"last_seq"`
	Pending   int              `json:"pending"`
}

type fleetObserved struct {
	Pod      reconcile.PodState    `json:"pod"`
	Bridge   reconcile.BridgeState `json:"bridge"`
	Activity bridge.State          `json:"activity"`
	Restarts int                   `json:"restarts"`
	Reason   reconcile.Reason      `json:"reason"`
}

// sorted returns res's spores sorted by id, whatever order they came in:
// res.Spores itself when it is sorted already (a pass's result is), so
// callers must not change it.
func sorted(res reconcile.Result) []reconcile.SporeHealth {
	byID := func(a, b reconcile.SporeHealth) int { return strings.Compare(a.ID, b.ID) }
	if slices.IsSortedFunc(res.Spores, byID) {
		return res.Spores
	}
	s := slices.Clone(res.Spores)
	slices.SortStableFunc(s, byID)
	return s
}

// fleetOf is what fleet.json and STATUS.md say of res: spores sorted by
// id, orphans sorted and unique. Both files are rendered from it alone,
// so its digest says when either would change.
func fleetOf(res reconcile.Result) fleetFile {
	spores := sorted(res)
	f := fleetFile{Version: fleetVersion, Spores: make([]fleetSpore, 0, len(spores)), Orphans: []string{}}
	for _, s := range spores {
		f.Spores = append(f.Spores, fleetSpore{
			ID: s.ID, Colony: s.Colony, Rank: s.Rank, Swarm: s.Swarm, Role: s.Role, Desired: s.Desired,
			Observed: fleetObserved{Pod: s.Observed.Pod, Bridge: s.Observed.Bridge, Activity: s.Observed.Activity,
				Restarts: s.Observed.Restarts, Reason: s.Observed.Reason},
			Effective: s.Effective, Reason: s.Reason, Code: s.Code, LastSeq: s.LastSeq, Pending: s.Pending,
		})
	}
	f.Orphans = append(f.Orphans, res.Orphans...)
	slices.Sort(f.Orphans)
	f.Orphans = slices.Compact(f.Orphans)
	return f
}

// fleetJSON renders fleet.json: indented, HTML characters escaped
// (\u003c) so that the file is inert even where it is served as HTML, and
// a final newline.
func fleetJSON(f fleetFile) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		return nil, fmt.Errorf("encode fleet.json: %w", err)
	}
	return b.Bytes(), nil
}
