package cron

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// Schedule is a parsed expression: one bit set per field.
type Schedule struct {
	minute, hour, dom, month, dow uint64
	// domStar and dowStar say the field began with `*`: with both
	// restricted a day matches when either does.
	domStar, dowStar bool
}

// field is one of the five: its name in errors, its bounds and names.
type field struct {
	name     string
	min, max int
	names    []string // names[i] is value min+i; nil: numbers only
}

var (
	minuteField = field{name: "minute", min: 0, max: 59}
	hourField   = field{name: "hour", min: 0, max: 23}
	domField    = field{name: "day of month", min: 1, max: 31}
	monthField  = field{name: "month", min: 1, max: 12,
		names: []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}}
	// dowField takes 7 as Sunday too: it is folded onto 0 after parsing.
	dowField = field{name: "day of week", min: 0, max: 7,
		names: []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}}
)

// MaxLen bounds an expression's length: a longer one is no one's cron.
const MaxLen = 256

// Parse reads a five-field expression. Its error names the field and
// says what was wrong, quoting at most a short part of the input.
func Parse(expr string) (Schedule, error) {
	if len(expr) > MaxLen {
		return Schedule{}, fmt.Errorf("longer than %d bytes", MaxLen)
	}
	fs := strings.Fields(expr)
	if len(fs) != 5 {
		return Schedule{}, fmt.Errorf("want 5 fields (minute hour day-of-month month day-of-week), found %d", len(fs))
	}
	var s Schedule
	var err error
	if s.minute, err = minuteField.parse(fs[0]); err != nil {
		return Schedule{}, err
	}
	if s.hour, err = hourField.parse(fs[1]); err != nil {
		return Schedule{}, err
	}
	if s.dom, err = domField.parse(fs[2]); err != nil {
		return Schedule{}, err
	}
	if s.month, err = monthField.parse(fs[3]); err != nil {
		return Schedule{}, err
	}
	if s.dow, err = dowField.parse(fs[4]); err != nil {
		return Schedule{}, err
	}
	if s.dow&(1<<7) != 0 {
		s.dow = s.dow&^(1<<7) | 1
	}
	s.domStar, s.dowStar = strings.HasPrefix(fs[2], "*"), strings.HasPrefix(fs[4], "*")
	return s, nil
}

// parse reads one field's comma-separated list into a bit set.
func (f field) parse(text string) (uint64, error) {
	var set uint64
	for part := range strings.SplitSeq(text, ",") {
		bitsOf, err := f.parsePart(part)
		if err != nil {
			return 0, fmt.Errorf("%s %q: %w", f.name, clip(part), err)
		}
		set |= bitsOf
	}
	return set, nil
}

// parsePart reads `*`, `a`, `a-b`, each with an optional `/step`.
func (f field) parsePart(part string) (uint64, error) {
	rng, stepText, stepped := strings.Cut(part, "/")
	step := 1
	if stepped {
		n, err := strconv.Atoi(stepText)
		if err != nil || n < 1 || n > f.max {
			return 0, fmt.Errorf("step must be a number from 1 to %d", f.max)
		}
		step = n
	}
	lo, hi := f.min, f.max
	switch {
	case rng == "*":
	case strings.Contains(rng, "-"):
		a, b, _ := strings.Cut(rng, "-")
		var err error
		if lo, err = f.value(a); err != nil {
			return 0, err
		}
		if hi, err = f.value(b); err != nil {
			return 0, err
		}
		if lo > hi {
			return 0, fmt.Errorf("range runs backwards")
		}
	default:
		v, err := f.value(rng)
		if err != nil {
			return 0, err
		}
		lo, hi = v, v
		if stepped { // `7/10`: from 7 to the field's end
			hi = f.max
		}
	}
	var set uint64
	for v := lo; v <= hi; v += step {
		set |= 1 << v
	}
	return set, nil
}

// value reads a number within the field's bounds, or one of its names.
func (f field) value(text string) (int, error) {
	for i, n := range f.names {
		if strings.EqualFold(text, n) {
			return f.min + i, nil
		}
	}
	v, err := strconv.Atoi(text)
	if err != nil || v < f.min || v > f.max || strings.HasPrefix(text, "+") {
		if f.names != nil {
			return 0, fmt.Errorf("want a number from %d to %d or a name (%s…)", f.min, f.max, f.names[0])
		}
		return 0, fmt.Errorf("want a number from %d to %d", f.min, f.max)
	}
	return v, nil
}

// clip bounds what an error quotes of the input.
func clip(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}

// dayMatches applies cron's rule for the two day fields.
func (s Schedule) dayMatches(t time.Time) bool {
	dom := s.dom&(1<<t.Day()) != 0
	dow := s.dow&(1<<t.Weekday()) != 0
	if s.domStar || s.dowStar {
		return dom && dow
	}
	return dom || dow
}

// Matches reports whether t's minute (in t's location) is a slot.
func (s Schedule) Matches(t time.Time) bool {
	return s.month&(1<<t.Month()) != 0 && s.dayMatches(t) &&
		s.hour&(1<<t.Hour()) != 0 && s.minute&(1<<t.Minute()) != 0
}

// horizon is how far Next and Prev look: an expression whose days never
// come (`0 0 30 2 *`) has no slot, and every other has one within it
// (29 February comes within 8 years).
const horizon = 9

// Next is the first slot strictly after t, in loc; false when there is
// none within the horizon.
func (s Schedule) Next(t time.Time, loc *time.Location) (time.Time, bool) {
	t = t.In(loc)
	t = t.Add(-time.Duration(t.Second())*time.Second - time.Duration(t.Nanosecond())).Add(time.Minute)
	end := t.Year() + horizon
	for t.Year() <= end {
		switch {
		case s.month&(1<<t.Month()) == 0:
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, loc)
		case !s.dayMatches(t):
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, loc)
		case s.hour&(1<<t.Hour()) == 0:
			t = t.Add(time.Duration(60-t.Minute()) * time.Minute)
		case s.minute&(1<<t.Minute()) == 0:
			t = t.Add(time.Duration(nextBit(s.minute, t.Minute())-t.Minute()) * time.Minute)
		case repeated(t):
			t = t.Add(time.Minute)
		default:
			return t, true
		}
	}
	return time.Time{}, false
}

// Prev is the last slot at or before t, in loc; false when there is none
// within the horizon.
func (s Schedule) Prev(t time.Time, loc *time.Location) (time.Time, bool) {
	t = t.In(loc)
	t = t.Add(-time.Duration(t.Second())*time.Second - time.Duration(t.Nanosecond()))
	end := t.Year() - horizon
	for t.Year() >= end {
		switch {
		case s.month&(1<<t.Month()) == 0:
			t = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, loc).Add(-time.Minute)
		case !s.dayMatches(t):
			t = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc).Add(-time.Minute)
		case s.hour&(1<<t.Hour()) == 0:
			t = t.Add(-time.Duration(t.Minute()+1) * time.Minute)
		case s.minute&(1<<t.Minute()) == 0:
			t = t.Add(-time.Duration(t.Minute()-prevBit(s.minute, t.Minute())) * time.Minute)
		case repeated(t):
			t = t.Add(-time.Minute)
		default:
			return t, true
		}
	}
	return time.Time{}, false
}

// repeated reports whether t's wall-clock minute came before, in the
// hour (or half hour) a daylight-saving change gives back: a slot then is
// taken at its first occurrence only.
func repeated(t time.Time) bool {
	for _, back := range []time.Duration{30 * time.Minute, time.Hour} {
		u := t.Add(-back)
		if u.Hour() == t.Hour() && u.Minute() == t.Minute() && u.Day() == t.Day() {
			return true
		}
	}
	return false
}

// nextBit is the first set bit of set above i (60 when none: the next
// hour).
func nextBit(set uint64, i int) int {
	rest := set >> (i + 1) << (i + 1)
	if rest == 0 {
		return 60
	}
	return bits.TrailingZeros64(rest)
}

// prevBit is the last set bit of set below i (-1 when none: the hour
// before).
func prevBit(set uint64, i int) int {
	rest := set & (1<<i - 1)
	if rest == 0 {
		return -1
	}
	return 63 - bits.LeadingZeros64(rest)
}
