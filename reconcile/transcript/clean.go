package transcript

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// tabWidth is where tab stops fall when tabs are expanded.
const tabWidth = 8

// clean makes s safe to display: invalid UTF-8 becomes U+FFFD, "\r\n"
// becomes "\n", tabs are expanded to spaces, and every other control
// character (C0, DEL, C1), bidirectional override and line separator is
// written as a visible escape (\x1b, \r, \u009b, \u202e) so it can neither
// drive a terminal nor disguise text. With multiline, "\n" is kept; without
// it, it is written as the two characters \n.
func clean(s string, multiline bool) string {
	if safe(s, multiline) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	col := 0 // runes since the last kept newline, for tab stops
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteRune(utf8.RuneError)
			col++
		case r == '\n' && multiline:
			b.WriteByte('\n')
			col = 0
		case r == '\r' && multiline && i < len(s) && s[i] == '\n':
			// "\r\n" is a line ending; the '\n' comes next.
		case r == '\t':
			n := tabWidth - col%tabWidth
			b.WriteString(strings.Repeat(" ", n))
			col += n
		case r == '\n':
			b.WriteString(`\n`)
			col += 2
		case r == '\r':
			b.WriteString(`\r`)
			col += 2
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x`)
			b.WriteString(hex2(uint32(r)))
			col += 4
		case unsafeRune(r):
			b.WriteString(`\u`)
			b.WriteString(hex4(uint32(r)))
			col += 6
		default:
			b.WriteRune(r)
			col++
		}
	}
	return b.String()
}

// safe reports whether clean would return s unchanged, so the common case
// allocates nothing.
func safe(s string, multiline bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 && !(c == '\n' && multiline) || c == 0x7f {
			return false
		}
		if c >= 0x80 {
			if !utf8.ValidString(s[i:]) {
				return false
			}
			for _, r := range s[i:] {
				if r < 0x20 && !(r == '\n' && multiline) || r == 0x7f || unsafeRune(r) {
					return false
				}
			}
			return true
		}
	}
	return true
}

// unsafeRune: C1 controls (U+0080–U+009F; some terminals read U+009B as
// CSI), bidirectional marks, embeddings, overrides and isolates (which can
// make text read differently from what it is), and the Unicode line and
// paragraph separators (which some viewers break lines on).
func unsafeRune(r rune) bool { return Unsafe(r) }

// Unsafe reports whether r must never reach a terminal or viewer as it
// is: C0 controls but for newline and tab are the caller's to handle;
// this is DEL, the C1 controls, the bidirectional controls and the line
// and paragraph separators. Every printer of sporectl escapes them.
func Unsafe(r rune) bool {
	if r == 0x7f {
		return true
	}
	return unsafeBeyondASCII(r)
}

func unsafeBeyondASCII(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	case r == 0x2028, r == 0x2029:
		return true
	}
	return false
}

func hex2(v uint32) string {
	s := strconv.FormatUint(uint64(v), 16)
	return strings.Repeat("0", 2-len(s)) + s
}

func hex4(v uint32) string {
	s := strconv.FormatUint(uint64(v), 16)
	if len(s) < 4 {
		s = strings.Repeat("0", 4-len(s)) + s
	}
	return s
}

// truncate keeps at most n runes of s, ending in "…" when it cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i, k := 0, 0
	for i < len(s) && k < n-1 {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		k++
	}
	return strings.TrimRight(s[:i], " ") + "…"
}

// firstLine is the first non-blank line of s, trimmed, with " …" appended
// when more lines follow (so a one-line summary never hides that it is
// one), and the number of non-blank lines after it.
func firstLine(s string) (string, int) {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	first, more := "", 0
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if first == "" {
			first = strings.TrimSpace(l)
			continue
		}
		more++
	}
	return first, more
}

// oneLine is s cleaned and cut to one line of at most width runes.
func oneLine(s string, width int) string {
	first, more := firstLine(s)
	if more > 0 {
		first += " …"
	}
	return truncate(clean(first, false), width)
}

// Sanitize returns s safe to show on one line: valid UTF-8, tabs expanded,
// and newlines, control characters, ANSI escapes and bidirectional
// overrides written as visible escapes (an ESC shows as \x1b).
func Sanitize(s string) string { return clean(s, false) }
