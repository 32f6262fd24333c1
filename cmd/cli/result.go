package cli

import "strings"

// actionResult is what a command that changes one object prints, in
// kubectl's manner: "spore/x created".
type actionResult struct {
	Kind   string `json:"kind"`
	ID     string `json:"id"`
	Action string `json:"action"`
}

type actionResults struct {
	Results []actionResult `json:"results"`
}

func (r actionResults) Table(bool) ([]string, [][]string) {
	rows := make([][]string, len(r.Results))
	for i, x := range r.Results {
		rows[i] = []string{x.ref() + " " + x.Action}
	}
	return nil, rows
}

func (r actionResults) Names() []string {
	out := make([]string, len(r.Results))
	for i, x := range r.Results {
		out[i] = x.name()
	}
	return out
}

// name is what -o name prints: kubectl's kind/name for spores and
// orphans; for a store, its location alone (an absolute path or a URL,
// which "store/" would only garble into "store//path").
func (r actionResult) name() string {
	if r.Kind == "store" {
		return r.ID
	}
	return r.Kind + "/" + r.ID
}

// ref is kubectl's kind/name, or "kind name" when the name is a path.
func (r actionResult) ref() string {
	if strings.Contains(r.ID, "/") {
		return r.Kind + " " + r.ID
	}
	return r.Kind + "/" + r.ID
}
