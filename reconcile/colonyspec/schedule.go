package colonyspec

import (
	"fmt"
	"time"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/internal/quote"
	"github.com/sporectl/sporectl/state"
)

// Schedule is one scheduled prompt of spec.schedules (docs/schedules.md).
type Schedule struct {
	Name string `yaml:"name" json:"name"`
	// To is a spore id, or SWARM/ROLE.
	To string `yaml:"to" json:"to"`
	// Cron is five fields: minute hour day-of-month month day-of-week.
	Cron string `yaml:"cron" json:"cron"`
	// Timezone is an IANA name; left out, UTC.
	Timezone string `yaml:"timezone,omitempty" json:"timezone,omitempty"`
	Prompt   string `yaml:"prompt" json:"prompt"`
}

// validateSchedules checks each schedule's grammar (state's rules, each
// fault at its own field) and that names are unique within the colony.
func (d *Document) validateSchedules() []error {
	if d.Spec.Schedules == nil {
		return nil
	}
	var errs []error
	bad := func(path, format string, a ...any) { errs = append(errs, d.errorAt(path, format, a...)) }
	list := *d.Spec.Schedules
	if len(list) > state.MaxSchedules {
		bad("spec.schedules", "%d schedules: at most %d per colony", len(list), state.MaxSchedules)
	}
	names := map[string]string{}
	for i, s := range list {
		p := fmt.Sprintf("spec.schedules[%d]", i)
		switch err := state.ValidateName("name", s.Name); {
		case s.Name == "":
			bad(p+".name", "a schedule's name is required")
		case err != nil:
			bad(p+".name", "%s", reason(err))
		case names[s.Name] != "":
			bad(p+".name", "schedule %s is listed twice (first at %s)", s.Name, names[s.Name])
		default:
			names[s.Name] = d.where(p)
		}
		if s.To == "" {
			bad(p+".to", "a schedule's target is required: a spore id or SWARM/ROLE")
		} else if state.ValidateScheduleTarget("to", s.To) != nil {
			bad(p+".to", "invalid value %s: want a spore id or SWARM/ROLE, each in the id grammar", quote.Value(s.To))
		}
		one := state.Schedule{Name: "x", To: "x", Cron: s.Cron, Timezone: s.Timezone, Prompt: "x"}
		if s.Cron == "" {
			bad(p+".cron", "a schedule's cron is required: five fields, such as \"0 9 * * 1-5\"")
		} else if err := state.ValidateSchedules("cron", []state.Schedule{one}); err != nil {
			bad(p+".cron", "%s", reason(err))
		}
		if s.Timezone != "" {
			one.Cron = "* * * * *"
			if err := state.ValidateSchedules("timezone", []state.Schedule{one}); err != nil {
				bad(p+".timezone", "%s", reason(err))
			}
		}
		if s.Prompt == "" {
			bad(p+".prompt", "a schedule's prompt is required")
		} else if err := bridge.CheckText(s.Prompt, state.MaxSchedulePromptBytes); err != nil {
			bad(p+".prompt", "%s", err.Error())
		}
	}
	return errs
}

// schedules is the stored list a document's makes: each schedule keeps
// its claim (Done) while its cron and zone stay the same; a new or
// re-timed one gets a zero Done, which applied fills with the time of
// the apply, so it never fires for a slot before it.
func schedules(doc []Schedule, stored []state.Schedule) []state.Schedule {
	byName := make(map[string]state.Schedule, len(stored))
	for _, s := range stored {
		byName[s.Name] = s
	}
	out := make([]state.Schedule, 0, len(doc))
	for _, s := range doc {
		n := state.Schedule{Name: s.Name, To: s.To, Cron: s.Cron, Timezone: s.Timezone, Prompt: s.Prompt}
		if old, ok := byName[s.Name]; ok && old.Cron == n.Cron && old.Timezone == n.Timezone {
			n.Done = old.Done
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// applied is c with every schedule that has no claim yet claimed up to
// now.
func applied(c state.ColonySettings, now time.Time) state.ColonySettings {
	if len(c.Schedules) == 0 {
		return c
	}
	c.Schedules = append([]state.Schedule(nil), c.Schedules...)
	for i := range c.Schedules {
		if c.Schedules[i].Done.IsZero() {
			c.Schedules[i].Done = now.UTC()
		}
	}
	return c
}

// scheduleDiffs are the schedules added, removed and changed, by name.
func scheduleDiffs(from, to []state.Schedule) []Diff {
	old := make(map[string]state.Schedule, len(from))
	for _, s := range from {
		old[s.Name] = s
	}
	var ds []Diff
	seen := map[string]bool{}
	for _, s := range to {
		seen[s.Name] = true
		was, ok := old[s.Name]
		text := "none"
		if ok {
			text = scheduleText(was)
		}
		ds = appendDiff(ds, "schedules["+s.Name+"]", text, scheduleText(s))
	}
	for _, s := range from {
		if !seen[s.Name] {
			ds = appendDiff(ds, "schedules["+s.Name+"]", scheduleText(s), "none")
		}
	}
	return ds
}

// scheduleText is a schedule as a diff shows it, its prompt bounded.
func scheduleText(s state.Schedule) string {
	tz := s.Timezone
	if tz == "" {
		tz = "UTC"
	}
	return fmt.Sprintf("to %s at %q %s: %s", s.To, s.Cron, tz, quote.Value(s.Prompt))
}

// schedulesOf is the stored schedules as a file writes them; nil for
// none.
func schedulesOf(ss []state.Schedule) *[]Schedule {
	if len(ss) == 0 {
		return nil
	}
	out := make([]Schedule, 0, len(ss))
	for _, s := range ss {
		out = append(out, Schedule{Name: s.Name, To: s.To, Cron: s.Cron, Timezone: s.Timezone, Prompt: s.Prompt})
	}
	return &out
}
