package state

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Desired is the only health input that is persisted (DESIGN "Health").
type Desired string

const (
	Running Desired = "Running" // the spore should be alive
	Paused  Desired = "Paused"  // asleep: nothing runs, the home is kept
	Stopped Desired = "Stopped" // off until a person says otherwise
)

// ParseDesired accepts the state names case-insensitively.
func ParseDesired(s string) (Desired, error) {
	for _, d := range []Desired{Running, Paused, Stopped} {
		if strings.EqualFold(s, string(d)) {
			return d, nil
		}
	}
	return "", &InvalidError{Field: "desired state", Value: s, Reason: "must be one of Running, Paused, Stopped"}
}

// Rank orders spores: arch > colony > swarm > spore.
type Rank string

const (
	RankSpore  Rank = "spore"
	RankSwarm  Rank = "swarm"
	RankColony Rank = "colony"
	RankArch   Rank = "arch"
)

// Level is the rank's height; a higher level sees and steers lower ones.
func (r Rank) Level() int {
	switch r {
	case RankSpore:
		return 0
	case RankSwarm:
		return 1
	case RankColony:
		return 2
	case RankArch:
		return 3
	}
	return -1
}

// ParseRank accepts spore, swarm, colony and arch.
func ParseRank(s string) (Rank, error) {
	r := Rank(s)
	if r.Level() < 0 {
		return "", &InvalidError{Field: "rank", Value: s, Reason: "must be one of spore, swarm, colony, arch"}
	}
	return r, nil
}

// Spec is what a spore runs with. Empty fields mean the store's defaults.
type Spec struct {
	Image   string `json:"image,omitempty"`
	CPU     string `json:"cpu,omitempty"`     // Kubernetes quantity, e.g. "2"
	Memory  string `json:"memory,omitempty"`  // e.g. "3Gi"
	Storage string `json:"storage,omitempty"` // size of the home, e.g. "5Gi"
	// Pod is what the kube runtime adds to the spore's pod (nil: none of
	// its own). Unlike the fields above, create does not fill it from the
	// store's default: the runtime merges the layers (MergePod) each time
	// it makes the pod, so a changed default reaches every spore's next
	// pod. A pointer, so a Spec stays comparable with ==.
	Pod *PodOptions `json:"pod,omitempty"`
}

// Equal reports whether s and o ask for the same: == but for the pod
// options, which compare by what they set (== compares their pointers).
func (s Spec) Equal(o Spec) bool {
	a, b := s, o
	a.Pod, b.Pod = nil, nil
	return a == b && s.Pod.Equal(o.Pod)
}

// Spore is what the store keeps about one agent: its Wish, which people
// and mycologists change (reconcile/wish is the one writer), and its
// Status, which reconcile passes conclude. The two have their own writes
// (Tx.PutWish; Tx.PutStatus through UpdateStatus); only CreateSpore
// writes both. Observed state
// (pods, bridge, what runs) is never part of either: every command
// recomputes it. Both are embedded so a reader names a field, not which
// half holds it; the JSON form is one flat object.
type Spore struct {
	Wish
	Status
}

// Wish is what is asked of a spore. Every change of it is a new
// Generation (reconcile/wish bumps it; stores refuse a wish that does not
// raise it).
type Wish struct {
	ID      string    `json:"id"`
	Colony  string    `json:"colony"`
	Rank    Rank      `json:"rank"`
	Swarm   string    `json:"swarm,omitempty"`
	Role    string    `json:"role,omitempty"`
	Desired Desired   `json:"desired"`
	Spec    Spec      `json:"spec"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"` // when the wish last changed

	// Generation counts changes of the spore's wish: every command that
	// changes the desired state, the spec or the loop, or resets the
	// breaker, stores it one higher. Stores never bump it themselves;
	// they keep what they are given and refuse a wish that does not
	// raise it. A reconcile pass that observed the spore at generation G
	// re-reads it inside the Update that commits its decision and writes
	// its status at the generation it finds there (Status
	// ObservedGeneration), so a newer wish is judged, never overwritten.
	// At most math.MaxInt64.
	Generation uint64 `json:"generation,omitempty"`

	// Loop is the interval of the [swarm] mycologist's `swarm loop`: every
	// Loop, reconcile prompts the spore (zero: no loop). When the next
	// loop prompt is due is status (LoopDue).
	Loop Duration `json:"loop,omitzero"`

	// SleepAfter is how long the spore may stay idle (no turn running,
	// nothing queued) before reconcile puts it to sleep; 0 takes its
	// colony's (ColonySettings), which may be never (docs/sleep.md). Never
	// set on the [arch], which is always on.
	SleepAfter Duration `json:"sleep_after,omitzero"`
	// DesiredBy is who set Desired when it was not a person or a
	// mycologist's command: "idle" (reconcile put it to sleep), later
	// "budget". Every transition a person asks for clears it.
	DesiredBy DesiredBy `json:"desired_by,omitempty"`
	// Budget is the spore's daily spend limit (docs/budgets.md); zero:
	// none of its own (its colony's may still hold).
	Budget Budget `json:"budget,omitzero"`
}

// Health is an effective health state's name ("Healthy", "Dead"). The
// names are reconcile/policy's (policy.Health is this type), the rules
// that choose one reconcile's (docs/health.md the table); the store
// keeps the last one a pass recorded and checks only its grammar: empty,
// or a capital letter then letters, at most MaxHealthName bytes.
type Health string

// MaxHealthName bounds a Health name, in bytes.
const MaxHealthName = 32

// Valid reports whether h is empty or a well-formed name.
func (h Health) Valid() bool {
	if len(h) > MaxHealthName {
		return false
	}
	for i, r := range string(h) {
		switch {
		case i == 0 && r >= 'A' && r <= 'Z':
		case i > 0 && (r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z'):
		default:
			return false
		}
	}
	return true
}

// HourActivity is one hour of a spore's activity.
type HourActivity struct {
	Hour         time.Time `json:"hour"` // UTC, on the hour
	Turns        int64     `json:"turns,omitempty"`
	ToolCalls    int64     `json:"tool_calls,omitempty"`
	InputTokens  int64     `json:"input_tokens,omitempty"`
	OutputTokens int64     `json:"output_tokens,omitempty"`
	// CostMicros is the cost the agent reported, in millionths of a US
	// dollar.
	CostMicros int64 `json:"cost_micros,omitempty"`
	// StoredBytes are the bytes of agent lines stored in the hour: what
	// the ingest quota (IngestQuotaOf) counts.
	StoredBytes int64 `json:"stored_bytes,omitempty"`
}

// Incident is one raised incident: its key (what identifies it, such
// as "collision:<file>:<spores>") and when it was raised.
type Incident struct {
	Key string    `json:"key"`
	At  time.Time `json:"at"`
}

// AddCount adds two non-negative activity counts, stopping at the
// largest int64: a count comes from an agent's line and can be anything,
// and a sum must never wrap to a negative one.
func AddCount(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Bounds of Spore.Activity and Spore.Incidents.
const (
	MaxActivity    = 7 * 24 // hours
	MaxIncidents   = 256
	MaxIncidentKey = 256 // bytes
)

// MinLoop and MaxLoop bound a spore's Loop interval (when set).
const (
	MinLoop = Duration(time.Minute)
	MaxLoop = Duration(24 * time.Hour)
)

// MaxHealthLen bounds Status.HealthReason, in bytes.
const MaxHealthLen = 128

// Validate checks every field that has a grammar, of the wish and the
// status, and that the status is not ahead of the wish.
func (s *Spore) Validate() error {
	if err := s.Wish.Validate(); err != nil {
		return err
	}
	if err := s.Status.Validate(); err != nil {
		return err
	}
	if s.ObservedGeneration > s.Generation {
		return &InvalidError{Field: "observed generation", Value: strconv.FormatUint(s.ObservedGeneration, 10),
			Reason: "must be at most the generation " + strconv.FormatUint(s.Generation, 10)}
	}
	return nil
}

// Validate checks every field of the wish that has a grammar.
func (s *Wish) Validate() error {
	if err := ValidateID(s.ID); err != nil {
		return err
	}
	if err := ValidateName("colony", s.Colony); err != nil {
		return err
	}
	if s.Rank.Level() < 0 {
		return &InvalidError{Field: "rank", Value: string(s.Rank), Reason: "must be one of spore, swarm, colony, arch"}
	}
	if s.Swarm != "" {
		if err := ValidateName("swarm", s.Swarm); err != nil {
			return err
		}
	}
	if s.Role != "" {
		if err := ValidateName("role", s.Role); err != nil {
			return err
		}
		if s.Swarm == "" {
			return &InvalidError{Field: "role", Value: s.Role, Reason: "needs a swarm"}
		}
	}
	switch s.Desired {
	case Running, Paused, Stopped:
	default:
		return &InvalidError{Field: "desired state", Value: string(s.Desired), Reason: "must be exactly one of Running, Paused, Stopped"}
	}
	for field, v := range map[string]string{"image": s.Spec.Image, "cpu": s.Spec.CPU, "memory": s.Spec.Memory, "storage": s.Spec.Storage} {
		if err := validateText("spec "+field, v); err != nil {
			return err
		}
	}
	if err := s.Spec.Pod.Validate("spec.pod"); err != nil {
		return err
	}
	if s.Generation > math.MaxInt64 {
		return &InvalidError{Field: "generation", Value: strconv.FormatUint(s.Generation, 10), Reason: "must be at most 9223372036854775807"}
	}
	if s.Loop != 0 && (s.Loop < MinLoop || s.Loop > MaxLoop) {
		return &InvalidError{Field: "loop", Value: s.Loop.String(), Reason: fmt.Sprintf("must be 0 (no loop) or between %s and %s", MinLoop, MaxLoop)}
	}
	if err := ValidateBudget("budget", s.Budget); err != nil {
		return err
	}
	return s.validateSleep()
}

// validateText refuses control characters (NUL included) and invalid
// UTF-8 in short, single-line fields.
func validateText(field, v string) error {
	if !utf8.ValidString(v) {
		return &InvalidError{Field: field, Value: "(binary)", Reason: "is not valid UTF-8"}
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return &InvalidError{Field: field, Value: v, Reason: "contains a control character"}
		}
	}
	return nil
}

// SporeHead is what the store knows about a spore's event log without
// reading it: the last sequence number assigned.
type SporeHead struct {
	LastSeq uint64
}

// Precision is the resolution at which every store keeps times: the
// PostgreSQL timestamp's. Backends truncate to it on write, so a time reads
// back the same from either.
const Precision = time.Microsecond

// Stamp is t as a store keeps it: UTC, truncated to Precision.
func Stamp(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC().Truncate(Precision)
}

// Stamped returns s with every time as a store keeps it. (Generation,
// Health, HealthReason and Loop are kept exactly and need no stamping.)
func (s Spore) Stamped() Spore {
	s.Wish = s.Wish.Stamped()
	s.Status = s.Status.Stamped()
	return s
}

// Stamped returns w with every time as a store keeps it.
func (w Wish) Stamped() Wish {
	w.Created, w.Updated = Stamp(w.Created), Stamp(w.Updated)
	return w
}
