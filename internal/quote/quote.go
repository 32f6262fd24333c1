// Package quote quotes a value inside an error message, bounded: a value
// can be anything a person or a file gave (a 30 MB flag, a field of a
// document), and an error that echoes it whole floods a terminal, a log
// line and every layer that wraps it. It must never decide whether a
// value is valid, nor drop what says how long the value was.
package quote

import (
	"strconv"
	"unicode/utf8"
)

// Max is the most bytes of a value an error shows.
const Max = 64

// Value is v quoted as Go quotes it (control characters escaped, so an
// error never carries them to a terminal); past Max bytes, its first Max
// bytes (cut between two characters) and how long it was:
// "aaaa…"… (31457280 bytes).
func Value(v string) string {
	if len(v) <= Max {
		return strconv.Quote(v)
	}
	cut := Max
	for cut > Max-utf8.UTFMax && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return strconv.Quote(v[:cut]) + "… (" + strconv.Itoa(len(v)) + " bytes)"
}
