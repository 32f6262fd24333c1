package cron

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range []struct{ expr, want string }{
		{"", "want 5 fields"},
		{"* * * *", "want 5 fields"},
		{"* * * * * *", "want 5 fields"},
		{"60 * * * *", `minute "60": want a number from 0 to 59`},
		{"* 24 * * *", `hour "24"`},
		{"* * 0 * *", `day of month "0"`},
		{"* * 32 * *", `day of month "32"`},
		{"* * * 13 *", `month "13"`},
		{"* * * foo *", `month "foo": want a number from 1 to 12 or a name (jan…)`},
		{"* * * * 8", `day of week "8"`},
		{"5-1 * * * *", "range runs backwards"},
		{"*/0 * * * *", "step must be"},
		{"*/x * * * *", "step must be"},
		{"1,,2 * * * *", `minute ""`},
		{"+5 * * * *", `minute "+5"`},
		{"-5 * * * *", `minute "-5"`},
		{"@daily", "want 5 fields"},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			_, err := Parse(tc.expr)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestNextAndPrev(t *testing.T) {
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	for _, tc := range []struct {
		name, expr string
		loc        *time.Location
		from       string
		next, prev string // "" none
	}{
		{"every minute", "* * * * *", time.UTC, "2026-12-07T09:00:30Z", "2026-12-07T09:01:00Z", "2026-12-07T09:00:00Z"},
		{"on the minute is prev, not next", "* * * * *", time.UTC, "2026-12-07T09:00:00Z", "2026-12-07T09:01:00Z", "2026-12-07T09:00:00Z"},
		{"weekdays at nine, Monday", "0 9 * * 1-5", time.UTC, "2026-12-07T08:00:00Z", "2026-12-07T09:00:00Z", "2026-12-04T09:00:00Z"},
		{"weekdays at nine, Saturday", "0 9 * * mon-fri", time.UTC, "2026-12-05T12:00:00Z", "2026-12-07T09:00:00Z", "2026-12-04T09:00:00Z"},
		{"every 15 minutes", "*/15 * * * *", time.UTC, "2026-12-07T09:16:00Z", "2026-12-07T09:30:00Z", "2026-12-07T09:15:00Z"},
		{"a stepped range", "10-40/10 8 * * *", time.UTC, "2026-12-07T08:41:00Z", "2026-12-08T08:10:00Z", "2026-12-07T08:40:00Z"},
		{"a value stepped to the end", "50/5 * * * *", time.UTC, "2026-12-07T08:56:00Z", "2026-12-07T09:50:00Z", "2026-12-07T08:55:00Z"},
		{"lists", "0,30 6,18 * * *", time.UTC, "2026-12-07T07:00:00Z", "2026-12-07T18:00:00Z", "2026-12-07T06:30:00Z"},
		{"Sunday as 7", "0 0 * * 7", time.UTC, "2026-12-07T00:00:00Z", "2026-12-13T00:00:00Z", "2026-12-06T00:00:00Z"},
		{"names of months", "0 0 1 jan,JUL *", time.UTC, "2026-12-07T00:00:00Z", "2027-01-01T00:00:00Z", "2026-07-01T00:00:00Z"},
		{"day of month or of week", "0 0 13 * fri", time.UTC, "2026-12-07T00:00:00Z", "2026-12-11T00:00:00Z", "2026-12-04T00:00:00Z"},
		{"the 13th when it comes first", "0 0 13 * fri", time.UTC, "2026-12-12T00:00:00Z", "2026-12-13T00:00:00Z", "2026-12-11T00:00:00Z"},
		{"29 February", "0 0 29 2 *", time.UTC, "2026-12-07T00:00:00Z", "2028-02-29T00:00:00Z", "2024-02-29T00:00:00Z"},
		{"never", "0 0 30 2 *", time.UTC, "2026-12-07T00:00:00Z", "", ""},
		{"the last day of months that have a 31st", "0 12 31 * *", time.UTC, "2026-12-07T00:00:00Z", "2026-12-31T12:00:00Z", "2026-10-31T12:00:00Z"},
		{"in a zone", "0 9 * * *", ny, "2026-12-07T13:00:00Z", "2026-12-07T14:00:00Z", "2026-12-06T14:00:00Z"},
		// 8 March 2026: New York's clocks go from 02:00 to 03:00.
		{"the skipped hour does not happen", "30 2 * * *", ny, "2026-03-08T05:00:00Z", "2026-03-09T06:30:00Z", "2026-03-07T07:30:00Z"},
		// 1 November 2026: 01:00 to 02:00 happens twice; 01:30 once, the first.
		{"the repeated hour happens once", "30 1 * * *", ny, "2026-11-01T05:00:00Z", "2026-11-01T05:30:00Z", "2026-10-31T05:30:00Z"},
		{"after its first occurrence, the next day", "30 1 * * *", ny, "2026-11-01T05:45:00Z", "2026-11-02T06:30:00Z", "2026-11-01T05:30:00Z"},
		{"in the second occurrence, prev is the first", "30 1 * * *", ny, "2026-11-01T06:45:00Z", "2026-11-02T06:30:00Z", "2026-11-01T05:30:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse(tc.expr)
			require.NoError(t, err)
			from := at(tc.from)
			next, ok := s.Next(from, tc.loc)
			if tc.next == "" {
				require.False(t, ok, "next %s", next)
			} else {
				require.True(t, ok)
				require.Equal(t, at(tc.next).UTC(), next.UTC())
			}
			prev, ok := s.Prev(from, tc.loc)
			if tc.prev == "" {
				require.False(t, ok, "prev %s", prev)
			} else {
				require.True(t, ok)
				require.Equal(t, at(tc.prev).UTC(), prev.UTC())
			}
		})
	}
}

// FuzzSchedule holds any expression Parse takes to the rules Next and
// Prev promise: Next is after t and a slot, Prev at or before t and a
// slot, and no slot lies between them.
func FuzzSchedule(f *testing.F) {
	for _, e := range []string{"* * * * *", "0 9 * * 1-5", "*/7 1-5/2 13 feb-apr sun", "0 0 29 2 *", "59 23 31 12 7", "0,15,30,45 */3 1,15 * mon-fri"} {
		f.Add(e, int64(1796634000), true)
	}
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, expr string, unix int64, zoned bool) {
		s, err := Parse(expr)
		if err != nil {
			return
		}
		loc := time.UTC
		if zoned {
			loc = ny
		}
		from := time.Unix(unix%(1<<33), 0)
		next, okNext := s.Next(from, loc)
		prev, okPrev := s.Prev(from, loc)
		if okNext && (!next.After(from) || !s.Matches(next.In(loc))) {
			t.Fatalf("%q Next(%s) = %s", expr, from, next)
		}
		if okPrev && (prev.After(from) || !s.Matches(prev.In(loc))) {
			t.Fatalf("%q Prev(%s) = %s", expr, from, prev)
		}
		if okPrev {
			if after, ok := s.Next(prev, loc); ok && !after.After(from) {
				t.Fatalf("%q: slot %s lies between Prev %s and %s", expr, after, prev, from)
			}
		}
	})
}
