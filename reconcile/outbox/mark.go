package outbox

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// What an agent reads of a message is its text alone: the store's From
// never reaches it. So the sender's mark is part of the text, and it
// must be one the sender cannot write (docs/mycologists.md "Messages"):
//
//   - the real mark (Message.Mark, chosen by the sending program from
//     the authenticated sender, never from the body) is alone on the
//     first line;
//   - in the sender's own text, every mark-shaped token — an opening
//     bracket ('[' or a look-alike: ［ 【 〔 ⟦ ⦋ …), any spaces or
//     invisible characters, then "from" in any case (fullwidth letters
//     too) — is rewritten as Quoted, so no line but the first starts
//     with a mark and the rewriting is visible to the reader;
//   - then the note (how to answer), written by the sending program.
//
// A person's prompt has no mark; its text is rewritten the same way.

// Quoted replaces every mark-shaped token of a sender's text.
const Quoted = "[quoted: from"

// Compose is the text the agent reads of m, and what the target's event
// and outbox entry keep (so a transcript shows what the agent read). A
// Verbatim text is sporectl's own and is kept as written.
func Compose(m Message) string {
	if m.Verbatim {
		return m.Text
	}
	var b strings.Builder
	b.Grow(len(m.Mark) + len(m.Text) + len(m.Note) + 4)
	if m.Mark != "" {
		b.WriteString(m.Mark)
		b.WriteByte('\n')
	}
	b.WriteString(Neutralize(m.Text))
	if m.Note != "" {
		b.WriteString("\n\n")
		b.WriteString(m.Note)
	}
	return b.String()
}

// Neutralize rewrites every mark-shaped token of s as Quoted. What it
// leaves holds no mark-shaped token (MarkAt finds none), even where a
// rewrite joins what was around it.
func Neutralize(s string) string {
	if !hasOpening(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		if n := MarkAt(s[i:]); n > 0 {
			b.WriteString(Quoted)
			i += n
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		b.WriteString(s[i : i+size])
		i += size
	}
	return b.String()
}

// MarkAt is the length in bytes of the mark-shaped token s starts with,
// 0 when it starts with none.
func MarkAt(s string) int {
	r, size := utf8.DecodeRuneInString(s)
	if !isOpening(r) {
		return 0
	}
	i := size
	// Spaces and invisible characters between the bracket and the word.
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsSpace(r) && !invisible(r) {
			break
		}
		i += size
	}
	for _, want := range "from" {
		// Invisible characters inside the word read as nothing.
		for i < len(s) {
			r, size := utf8.DecodeRuneInString(s[i:])
			if !invisible(r) {
				break
			}
			i += size
		}
		if i >= len(s) {
			return 0
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if foldLetter(r) != want {
			return 0
		}
		i += size
	}
	return i
}

// openings are '[' and the brackets that look like it.
var openings = map[rune]bool{
	'[': true, '［': true, '【': true, '〔': true, '⟦': true, '⦋': true,
	'〚': true, '〖': true, '〘': true, '⁅': true, '❲': true, '⦍': true,
	'⦏': true, '﹝': true, '⟬': true, '⦗': true,
}

func isOpening(r rune) bool { return openings[r] }

// hasOpening is a quick test before the rewrite: most texts hold no
// bracket at all.
func hasOpening(s string) bool {
	return strings.IndexFunc(s, isOpening) >= 0
}

// invisible: format characters (zero-width spaces and joiners, soft
// hyphens, byte order marks, bidirectional controls) show nothing.
func invisible(r rune) bool { return unicode.Is(unicode.Cf, r) }

// foldLetter maps a letter to its lower-case ASCII form when it has one
// (fullwidth Latin letters too).
func foldLetter(r rune) rune {
	if r >= 0xFF21 && r <= 0xFF3A || r >= 0xFF41 && r <= 0xFF5A {
		r -= 0xFF21 - 'A'
	}
	return unicode.ToLower(r)
}
