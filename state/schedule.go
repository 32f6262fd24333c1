package state

import (
	"fmt"
	"strings"
	"time"
	// Timezones come with the binary: a schedule's zone is found on a
	// machine (or in an image) without /usr/share/zoneinfo.
	_ "time/tzdata"
	"unicode/utf8"

	"github.com/sporectl/sporectl/internal/cron"
)

// Schedule is one of a colony's scheduled prompts (docs/schedules.md): a
// prompt recorded for a spore at each slot of a cron expression. Its
// declared part (Name to Prompt) is what `apply` writes from a Colony
// file; Done is the pass's part, the slot claim.
type Schedule struct {
	// Name is unique within the colony, in the id grammar.
	Name string `json:"name"`
	// To is a spore id, or SWARM/ROLE: the one spore of the colony in
	// that swarm with that role when the slot is due.
	To string `json:"to"`
	// Cron is a five-field expression (internal/cron).
	Cron string `json:"cron"`
	// Timezone is an IANA name; "" is UTC.
	Timezone string `json:"timezone,omitempty"`
	// Prompt is the text recorded, under the mark "[scheduled: NAME]".
	Prompt string `json:"prompt"`
	// Done is the claim: every slot at or before it is done — recorded,
	// skipped, or before the schedule was applied (apply sets it to the
	// time it writes a new schedule or a changed cron or zone). A pass
	// records a slot only after it, and moves Done to that slot in the
	// same transaction as the prompt, so a slot is recorded once.
	Done time.Time `json:"done"`
}

// Bounds of a colony's schedules: they live in the settings document,
// which every pass reads.
const (
	MaxSchedules           = 32
	MaxSchedulePromptBytes = 16 << 10
)

// SlotID names a slot: "NAME@2026-12-07T09:00:00Z". It is the message
// event's Action and in the text's mark, so a slot is found in a log.
func (s Schedule) SlotID(slot time.Time) string {
	return s.Name + "@" + slot.UTC().Format(time.RFC3339)
}

// Location is the schedule's zone (UTC for "").
func (s Schedule) Location() (*time.Location, error) {
	if s.Timezone == "" {
		return time.UTC, nil
	}
	return time.LoadLocation(s.Timezone)
}

// Due is the slot to record at now: the latest slot at or before now,
// when it is after Done. Slots missed while no pass ran are caught up
// once, by that latest one. false: nothing is due (or the stored
// schedule does not parse, which Validate keeps out).
func (s Schedule) Due(now time.Time) (time.Time, bool) {
	c, loc, err := s.parsed()
	if err != nil {
		return time.Time{}, false
	}
	slot, ok := c.Prev(now, loc)
	if !ok || !slot.After(s.Done) {
		return time.Time{}, false
	}
	return slot.UTC(), true
}

// Next is the first slot after now (and after Done); false: none.
func (s Schedule) Next(now time.Time) (time.Time, bool) {
	c, loc, err := s.parsed()
	if err != nil {
		return time.Time{}, false
	}
	from := now
	if s.Done.After(from) {
		from = s.Done
	}
	next, ok := c.Next(from, loc)
	return next.UTC(), ok
}

func (s Schedule) parsed() (cron.Schedule, *time.Location, error) {
	loc, err := s.Location()
	if err != nil {
		return cron.Schedule{}, nil, err
	}
	c, err := cron.Parse(s.Cron)
	return c, loc, err
}

// Target splits To: a spore id, or a swarm and a role.
func (s Schedule) Target() (id, swarm, role string) {
	if sw, r, ok := strings.Cut(s.To, "/"); ok {
		return "", sw, r
	}
	return s.To, "", ""
}

// ValidateSchedules refuses what a store does not keep of a colony's
// schedules; field is where they are ("colonies.NAME.schedules").
func ValidateSchedules(field string, ss []Schedule) error {
	if len(ss) > MaxSchedules {
		return &InvalidError{Field: field, Value: fmt.Sprint(len(ss)), Reason: fmt.Sprintf("at most %d schedules per colony", MaxSchedules)}
	}
	seen := map[string]bool{}
	for i, s := range ss {
		f := fmt.Sprintf("%s[%d]", field, i)
		if err := ValidateName(f+".name", s.Name); err != nil {
			return err
		}
		if seen[s.Name] {
			return &InvalidError{Field: f + ".name", Value: s.Name, Reason: "is another schedule's name in the colony"}
		}
		seen[s.Name] = true
		if err := ValidateScheduleTarget(f+".to", s.To); err != nil {
			return err
		}
		if _, err := cron.Parse(s.Cron); err != nil {
			return &InvalidError{Field: f + ".cron", Value: preview(s.Cron), Reason: err.Error()}
		}
		if _, err := s.Location(); err != nil || strings.EqualFold(s.Timezone, "local") {
			return &InvalidError{Field: f + ".timezone", Value: preview(s.Timezone), Reason: "must be an IANA time zone such as Europe/Paris (empty: UTC)"}
		}
		if strings.TrimSpace(s.Prompt) == "" || len(s.Prompt) > MaxSchedulePromptBytes || !utf8.ValidString(s.Prompt) {
			return &InvalidError{Field: f + ".prompt", Value: preview(s.Prompt), Reason: fmt.Sprintf("must be UTF-8 text, not blank, at most %d bytes", MaxSchedulePromptBytes)}
		}
	}
	return nil
}

// ValidateScheduleTarget refuses a To that is neither a spore id nor
// SWARM/ROLE (both names in the id grammar).
func ValidateScheduleTarget(field, to string) error {
	sw, role, ok := strings.Cut(to, "/")
	bad := ValidateID(to) != nil
	if ok {
		bad = ValidateName(field, sw) != nil || ValidateName(field, role) != nil
	}
	if bad {
		return &InvalidError{Field: field, Value: preview(to), Reason: "must be a spore id or SWARM/ROLE, each in the id grammar"}
	}
	return nil
}
