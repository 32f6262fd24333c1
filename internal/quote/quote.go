// Package quote quotes a value inside an error message, bounded: a value
// can be anything a person or a file gave (a 30 MB flag, a field of a
// document), and an error that echoes it whole floods a terminal, a log
// line and every layer that wraps it. It must never decide whether a
// value is valid, nor drop what says how long the value was.
package quote

import (
	"strconv"
	"strings"
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

// MaxRun is the longest run of non-blank bytes Message keeps whole: a
// path or URL is shorter; a value a person or a file gave may not be.
const MaxRun = 1024

// MaxMessage is the most bytes of a message Message keeps.
const MaxMessage = 4096

// Message bounds a whole message made elsewhere (an error that wraps an
// operating system's, which names the path it was given; a parser's that
// echoes its input): every run of non-blank bytes longer than MaxRun is
// cut as Value cuts a value, unquoted, and what remains past MaxMessage
// bytes is cut in its middle, its start and end kept. Blanks and short
// words are kept as they are, so a message without a huge value passes
// unchanged.
func Message(msg string) string {
	if len(msg) <= MaxRun && len(msg) <= MaxMessage {
		return msg
	}
	var b strings.Builder
	start := -1
	flush := func(end int) {
		run := msg[start:end]
		if len(run) > MaxRun {
			cut := Max
			for cut > Max-utf8.UTFMax && !utf8.RuneStart(run[cut]) {
				cut--
			}
			// Punctuation that ends the run ("PATH:") is the message's, not
			// the value's: kept.
			end := len(run)
			for end > len(run)-4 && strings.IndexByte(":;,.)]}\"'", run[end-1]) >= 0 {
				end--
			}
			run = run[:cut] + "…(" + strconv.Itoa(end) + " bytes)" + run[end:]
		}
		b.WriteString(run)
		start = -1
	}
	for i := 0; i < len(msg); i++ {
		blank := msg[i] == ' ' || msg[i] == '\n' || msg[i] == '\t'
		switch {
		case blank && start >= 0:
			flush(i)
			b.WriteByte(msg[i])
		case blank:
			b.WriteByte(msg[i])
		case start < 0:
			start = i
		}
	}
	if start >= 0 {
		flush(len(msg))
	}
	out := b.String()
	if len(out) <= MaxMessage {
		return out
	}
	head, tail := MaxMessage*3/4, MaxMessage/8
	for head > 0 && !utf8.RuneStart(out[head]) {
		head--
	}
	from := len(out) - tail
	for from < len(out) && !utf8.RuneStart(out[from]) {
		from++
	}
	return out[:head] + " … (" + strconv.Itoa(from-head) + " bytes cut) … " + out[from:]
}
