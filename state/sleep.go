package state

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// DesiredBy says who set a spore's current desired state when it was not
// a person or a mycologist's command (docs/sleep.md). Whoever set it
// decides what may undo it: a spore that idle put to sleep may be woken
// by a message when its colony allows it (ColonySettings WakeOnMessage);
// one a person put to sleep is woken only by a wake.
type DesiredBy string

const (
	// ByPerson is the zero value: a person, or a mycologist's command.
	ByPerson DesiredBy = ""
	// ByIdle: reconcile put the spore to sleep after SleepAfter idle.
	ByIdle DesiredBy = "idle"
	// ByBudget: reconcile put the spore to sleep when its budget ran out.
	ByBudget DesiredBy = "budget"
)

// Valid reports whether b is one of the names above.
func (b DesiredBy) Valid() bool {
	switch b {
	case ByPerson, ByIdle, ByBudget:
		return true
	}
	return false
}

// Text is b as status says it: "a person", "idle", "budget".
func (b DesiredBy) Text() string {
	if b == ByPerson {
		return "a person"
	}
	return string(b)
}

// MinSleepAfter and MaxSleepAfter bound a SleepAfter (when set): a spore
// that sleeps after seconds would be started and stopped between two
// prompts; one that sleeps after more than a month need not be asked to.
const (
	MinSleepAfter = Duration(time.Minute)
	MaxSleepAfter = Duration(30 * 24 * time.Hour)
)

// ValidateSleepAfter refuses a SleepAfter out of bounds; field names it
// ("sleep after", "colonies.NAME.sleep_after").
func ValidateSleepAfter(field string, d Duration) error {
	if d != 0 && (d < MinSleepAfter || d > MaxSleepAfter) {
		return &InvalidError{Field: field, Value: d.String(), Reason: fmt.Sprintf("must be 0 (never) or between %s and %s", MinSleepAfter, time.Duration(MaxSleepAfter))}
	}
	return nil
}

// validateSleep checks the wish's idle-sleep fields: SleepAfter's bounds,
// a known DesiredBy, and DesiredBy only on a spore that is not wished
// awake (it says who put it to sleep). That the [arch] has none is a
// product rule, not grammar: reconcile/policy's AlwaysOn, which create,
// set sleep-after and apply ask before they write.
func (s *Wish) validateSleep() error {
	if err := ValidateSleepAfter("sleep after", s.SleepAfter); err != nil {
		return err
	}
	if !s.DesiredBy.Valid() {
		return &InvalidError{Field: "desired by", Value: string(s.DesiredBy), Reason: `must be empty (a person), "idle" or "budget"`}
	}
	if s.DesiredBy != ByPerson && s.Desired == Running {
		return &InvalidError{Field: "desired by", Value: string(s.DesiredBy), Reason: "must be empty while desired Running: only a sleep is set by idle or budget"}
	}
	return nil
}

// ColonySettings are one colony's defaults for idle sleep and for its
// spores' pods, and its budget.
type ColonySettings struct {
	// SleepAfter is the idle time after which an awake spore of the
	// colony is put to sleep when its own SleepAfter is 0 (0: never).
	SleepAfter Duration `json:"sleep_after,omitzero"`
	// WakeOnMessage lets a message (tell, swarm tell, a person's prompt)
	// wake a spore of the colony that idle put to sleep without --wake.
	WakeOnMessage bool `json:"wake_on_message,omitempty"`
	// Budget is the daily limit on what the colony's spores spend
	// together (docs/budgets.md); zero: none.
	Budget Budget `json:"budget,omitzero"`
	// IngestQuotaMiB is how many MiB of agent lines each spore of the
	// colony may have stored per UTC day (docs/bridge.md); 0: the
	// default, DefaultIngestQuotaMiB.
	IngestQuotaMiB int64 `json:"ingest_quota_mib,omitempty"`
	// Pod is the colony's pod options (docs/runtimes.md "Pod options"):
	// every spore of the colony gets them at its next start, over the
	// store's default and under the spore's own. Nil: none.
	Pod *PodOptions `json:"pod,omitempty"`
	// Egress is where the colony's spores may connect beyond serve on
	// the Kubernetes runtime (docs/security.md "NetworkPolicy"):
	// EgressAll ("", the default: anywhere outside the cluster, for
	// package installs and git pushes) or EgressNone (serve alone).
	Egress string `json:"egress,omitempty"`
	// Schedules are the colony's scheduled prompts (schedule.go), in the
	// order its file gives them; nil: none.
	Schedules []Schedule `json:"schedules,omitempty"`
}

// Egress settings of a colony (ColonySettings.Egress).
const (
	EgressAll  = "all"
	EgressNone = "none"
)

// IsZero reports whether c sets nothing (WithColony drops such a colony).
func (c ColonySettings) IsZero() bool {
	return c.SleepAfter == 0 && !c.WakeOnMessage && c.Budget.IsZero() && c.IngestQuotaMiB == 0 && c.Pod.IsZero() && c.Egress == "" && len(c.Schedules) == 0
}

// Equal reports whether c and o say the same. Pod options compare by
// what they set: none and an empty set are the same.
func (c ColonySettings) Equal(o ColonySettings) bool {
	if c.SleepAfter != o.SleepAfter || c.WakeOnMessage != o.WakeOnMessage || c.Budget != o.Budget || c.IngestQuotaMiB != o.IngestQuotaMiB || c.Egress != o.Egress || !slices.Equal(c.Schedules, o.Schedules) {
		return false
	}
	if c.Pod.IsZero() || o.Pod.IsZero() {
		return c.Pod.IsZero() == o.Pod.IsZero()
	}
	return c.Pod.Equal(o.Pod)
}

// ColonyList is the stored colony settings by colony name. It is a
// pointer in Settings so that Settings stay comparable with ==.
type ColonyList map[string]ColonySettings

// MaxColonies bounds the colonies with settings in one store.
const MaxColonies = 1024

// Colony returns colony name's settings (the zero value when none).
func (s Settings) Colony(name string) ColonySettings {
	if s.Colonies == nil {
		return ColonySettings{}
	}
	return (*s.Colonies)[name]
}

// WithColony returns s with colony name's settings set to c; the zero
// value removes the colony's key. s itself is not changed.
func (s Settings) WithColony(name string, c ColonySettings) Settings {
	m := ColonyList{}
	if s.Colonies != nil {
		m = maps.Clone(*s.Colonies)
	}
	if c.IsZero() {
		delete(m, name)
	} else {
		m[name] = c
	}
	if len(m) == 0 {
		s.Colonies = nil
		return s
	}
	s.Colonies = &m
	return s
}

// ValidateColonies refuses a colony name outside the grammar, a
// SleepAfter out of bounds and more than MaxColonies. The error is an
// *InvalidError whose Field is "colonies" or "colonies.NAME…".
func ValidateColonies(cs ColonyList) error {
	if len(cs) > MaxColonies {
		return &InvalidError{Field: "colonies", Value: fmt.Sprint(len(cs)), Reason: fmt.Sprintf("at most %d colonies may have settings", MaxColonies)}
	}
	for _, name := range slices.Sorted(maps.Keys(cs)) {
		if err := ValidateName("colony", name); err != nil {
			return err
		}
		if err := ValidateSleepAfter("colonies."+name+".sleep_after", cs[name].SleepAfter); err != nil {
			return err
		}
		if err := ValidateBudget("colonies."+name+".budget", cs[name].Budget); err != nil {
			return err
		}
		if err := ValidateIngestQuota("colonies."+name+".ingest_quota_mib", cs[name].IngestQuotaMiB); err != nil {
			return err
		}
		if err := cs[name].Pod.Validate("colonies." + name + ".pod"); err != nil {
			return err
		}
		if err := ValidateEgress("colonies."+name+".egress", cs[name].Egress); err != nil {
			return err
		}
		if err := ValidateSchedules("colonies."+name+".schedules", cs[name].Schedules); err != nil {
			return err
		}
	}
	return nil
}

// ValidateEgress refuses an egress setting but "" (the default), EgressAll
// and EgressNone; field names where it came from.
func ValidateEgress(field, e string) error {
	switch e {
	case "", EgressAll, EgressNone:
		return nil
	}
	return &InvalidError{Field: field, Value: preview(e), Reason: "must be all or none"}
}
