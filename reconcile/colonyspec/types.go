package colonyspec

import (
	"fmt"
	"strconv"
	"time"

	"github.com/sporectl/sporectl/internal/quote"
	"github.com/sporectl/sporectl/state"
)

// The document's type, as every file says it.
const (
	APIVersion = "sporectl/v1"
	Kind       = "Colony"
)

// Document is one Colony: its name and its spores. A field is one struct
// field with its yaml and json names (the same), a pointer where leaving
// it out means "keep what is stored": Read decodes every field strictly
// from its tag, Export prints them through the json tags, and Plan says
// what each one changes.
type Document struct {
	APIVersion string     `yaml:"apiVersion" json:"apiVersion"`
	Kind       string     `yaml:"kind" json:"kind"`
	Metadata   Metadata   `yaml:"metadata" json:"metadata"`
	Spec       ColonySpec `yaml:"spec" json:"spec"`

	// src is where the document was read: its file and the line of each
	// field path ("spec.spores[2].resources.cpu").
	src *source
}

// Metadata names the colony.
type Metadata struct {
	Name string `yaml:"name" json:"name"`
}

// ColonySpec is what the colony holds.
type ColonySpec struct {
	// SleepAfter and WakeOnMessage are the colony's idle-sleep settings
	// (docs/sleep.md), what `colony set` sets: the idle time after which a
	// spore with no sleepAfter of its own is put to sleep ("0": never),
	// and whether a message wakes a spore idle put to sleep.
	SleepAfter    *string `yaml:"sleepAfter,omitempty" json:"sleepAfter,omitempty"`
	WakeOnMessage *bool   `yaml:"wakeOnMessage,omitempty" json:"wakeOnMessage,omitempty"`
	// Budget is the daily budget of all the colony's spores together
	// (docs/budgets.md), what `colony set --budget-tokens/--budget-cost`
	// sets; given, it replaces the stored one whole.
	Budget *Budget `yaml:"budget,omitempty" json:"budget,omitempty"`
	// Pod is the colony's pod options, what `colony set`'s pod option
	// flags set: every spore of the colony gets them, under its own.
	Pod *Pod `yaml:"pod,omitempty" json:"pod,omitempty"`
	// Egress is where the colony's spores may connect beyond serve and
	// DNS (docs/security.md): "all" (the public internet) or "none",
	// what `colony set --egress` sets. A spore's pod gets it at its next
	// start.
	Egress *string `yaml:"egress,omitempty" json:"egress,omitempty"`
	// Schedules are the colony's scheduled prompts (docs/schedules.md);
	// given, the list replaces the stored one whole (`schedules: []`
	// removes them all); left out, the stored ones are kept.
	Schedules *[]Schedule `yaml:"schedules,omitempty" json:"schedules,omitempty"`
	// Defaults apply to every spore that leaves a field out.
	Defaults *Fields `yaml:"defaults,omitempty" json:"defaults,omitempty"`
	Spores   []Spore `yaml:"spores" json:"spores"`
}

// Fields are what a spore and spec.defaults can both say. A field left
// out of both is not managed by the file: a new spore gets create's
// default, an existing one keeps what is stored.
type Fields struct {
	Desired   *string    `yaml:"desired,omitempty" json:"desired,omitempty"`
	Image     *string    `yaml:"image,omitempty" json:"image,omitempty"`
	Resources *Resources `yaml:"resources,omitempty" json:"resources,omitempty"`
	// Budget is the spore's daily budget (docs/budgets.md); given, it
	// replaces the stored one whole (a limit left out is 0: none).
	Budget *Budget `yaml:"budget,omitempty" json:"budget,omitempty"`
}

// Budget is a daily budget: tokens in and out, and cost in US dollars
// ("2.50"), over the UTC day; 0 or left out: no limit of that kind.
type Budget struct {
	TokensPerDay *string `yaml:"tokensPerDay,omitempty" json:"tokensPerDay,omitempty"`
	CostPerDay   *string `yaml:"costPerDay,omitempty" json:"costPerDay,omitempty"`
}

// budget is b as the store keeps it (Read checked it).
func (b *Budget) budget() state.Budget {
	var out state.Budget
	if b.TokensPerDay != nil {
		out.TokensPerDay, _ = parseTokens(*b.TokensPerDay)
	}
	if b.CostPerDay != nil {
		out.CostPerDayMicros, _ = state.ParseCost("costPerDay", *b.CostPerDay)
	}
	return out
}

// parseTokens reads a number of tokens: 0 or more.
func parseTokens(v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid value %s: want 0 (no limit) or more tokens", quote.Value(v))
	}
	return n, nil
}

// budgetText is a budget as a diff shows it: "20 tokens, $2.50 a day", "none".
func budgetText(b state.Budget) string {
	if b.IsZero() {
		return "none"
	}
	return fmt.Sprintf("%d tokens, %s a day", b.TokensPerDay, state.CostText(b.CostPerDayMicros))
}

// Resources are what a spore runs with (Kubernetes quantities).
type Resources struct {
	CPU     *string `yaml:"cpu,omitempty" json:"cpu,omitempty"`
	Memory  *string `yaml:"memory,omitempty" json:"memory,omitempty"`
	Storage *string `yaml:"storage,omitempty" json:"storage,omitempty"`
}

// Spore is one spore of the colony.
type Spore struct {
	ID    string  `yaml:"id" json:"id"`
	Rank  *string `yaml:"rank,omitempty" json:"rank,omitempty"`
	Swarm *string `yaml:"swarm,omitempty" json:"swarm,omitempty"`
	Role  *string `yaml:"role,omitempty" json:"role,omitempty"`
	// Loop is a [swarm] mycologist's `swarm loop` interval ("30m"; "0":
	// none).
	Loop *string `yaml:"loop,omitempty" json:"loop,omitempty"`
	// SleepAfter is the spore's own idle time before it is put to sleep
	// ("30m"; "0": its colony's).
	SleepAfter *string `yaml:"sleepAfter,omitempty" json:"sleepAfter,omitempty"`
	// Pod is the spore's own pod options, merged over its colony's and
	// the store's at each start. Not in spec.defaults: spec.pod is the
	// colony's, kept once for all its spores.
	Pod    *Pod `yaml:"pod,omitempty" json:"pod,omitempty"`
	Fields `yaml:",inline"`
}

// merged is s with what it leaves out taken from d.
func (s Spore) merged(d *Fields) Fields {
	f := s.Fields
	if d == nil {
		return f
	}
	f.Desired = or(f.Desired, d.Desired)
	f.Image = or(f.Image, d.Image)
	f.Budget = or(f.Budget, d.Budget)
	if d.Resources != nil {
		r := Resources{}
		if f.Resources != nil {
			r = *f.Resources
		}
		r.CPU = or(r.CPU, d.Resources.CPU)
		r.Memory = or(r.Memory, d.Resources.Memory)
		r.Storage = or(r.Storage, d.Resources.Storage)
		f.Resources = &r
	}
	return f
}

func or[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

// spec is f's resources and image over the stored spec: what f leaves
// out is kept.
func (f Fields) spec(stored state.Spec) state.Spec {
	s := stored
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&s.Image, f.Image)
	if r := f.Resources; r != nil {
		set(&s.CPU, r.CPU)
		set(&s.Memory, r.Memory)
		set(&s.Storage, r.Storage)
	}
	return s
}

// parseLoop reads a loop interval: a Go duration, 0 for none, else
// within state.MinLoop and state.MaxLoop.
func parseLoop(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("invalid value %s: want a duration such as 30m (0: no loop)", quote.Value(v))
	}
	if d != 0 && (d < time.Duration(state.MinLoop) || d > time.Duration(state.MaxLoop)) {
		return 0, fmt.Errorf("invalid value %s: want 0 (no loop) or from %s to %s", quote.Value(v), state.MinLoop, state.MaxLoop)
	}
	return d, nil
}

// parseSleepAfter reads an idle time: a Go duration, 0 for none, else
// within state.MinSleepAfter and state.MaxSleepAfter.
func parseSleepAfter(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("invalid value %s: want a duration such as 30m (0: none)", quote.Value(v))
	}
	if d != 0 && (d < time.Duration(state.MinSleepAfter) || d > time.Duration(state.MaxSleepAfter)) {
		return 0, fmt.Errorf("invalid value %s: want 0 (none) or from %s to %s", quote.Value(v), state.MinSleepAfter, state.MaxSleepAfter)
	}
	return d, nil
}

func ptr[T any](v T) *T { return &v }

// egressText is a colony's egress as a diff shows it: the default ("")
// is "all".
func egressText(e string) string {
	if e == "" {
		return state.EgressAll
	}
	return e
}
