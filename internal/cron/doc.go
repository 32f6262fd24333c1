// Package cron reads the standard five-field cron expression (minute,
// hour, day of month, month, day of week) and finds the times it names,
// in a time zone: the slots of a Colony's scheduled prompts
// (docs/schedules.md). It is pure: no clock, no I/O; a time is always a
// parameter.
//
// The grammar is Vixie cron's: each field a comma-separated list of `*`,
// a value, a range `a-b`, each optionally stepped `/n` (`*/15`, `1-5/2`,
// `7/10` meaning 7 to the field's end); months and days of week also by
// their three-letter English names (`jan`, `mon-fri`), day of week 0 or
// 7 for Sunday. When both day of month and day of week are restricted (neither
// starts with `*`), a day matches when either does, as cron has always
// done. No seconds, no years, no `@daily`-style macros, no `L`, `W` or
// `#`.
//
// Times are wall-clock times in the schedule's zone: a slot that falls in
// the hour a daylight-saving change skips does not happen that day, and
// one in the hour a change repeats happens once, at its first occurrence.
package cron
