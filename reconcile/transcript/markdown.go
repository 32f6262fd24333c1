package transcript

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sporectl/sporectl/state"
)

// MarkdownWriter writes a transcript as Markdown a page of events at a
// time, so a long log never has to be in memory at once.
//
// The document is a heading, then the conversation: prompts and messages
// as a bold header (seq, sender, time) over a block quote; the agent's
// text as Markdown, as it wrote it; every other line (tool calls and their
// results as code spans, turn results, lifecycle, system and bridge
// lines) as one line each, consecutive ones in one paragraph.
//
// What could break out of that structure is neutralised: in text outside
// fenced code, "<" is written "&lt;" (so no HTML, no autolink); a code
// fence is honoured only where it starts a line with no indentation, every
// other line a renderer might read as a fence (indented, or in a list or
// quote) has its fence escaped, and a fence still open when the text ends
// is closed there. Code inside a fence is left exactly as written.
type MarkdownWriter struct {
	w     *bufio.Writer
	n     int  // events written
	chain bool // the last block is a paragraph of one-line entries, not yet ended
}

// NewMarkdown starts the transcript of spore id on w.
func NewMarkdown(w io.Writer, id string) *MarkdownWriter {
	m := &MarkdownWriter{w: bufio.NewWriter(w)}
	m.w.WriteString("# Transcript of " + EscapeMarkdown(id) + "\n")
	return m
}

// MarkdownState is all a transcript's rendering carries from one event to
// the next: whether any event was written, and whether the last one left
// a paragraph of one-line entries open (the next entry joins it with a
// hard line break; a block, or Close, ends it first). The bytes of an
// event depend on nothing else before it, so what the events after some
// point add is a function of this state and those events alone.
type MarkdownState struct {
	Started bool
	Open    bool
}

// State is the writer's state after the events written so far.
func (m *MarkdownWriter) State() MarkdownState {
	return MarkdownState{Started: m.n > 0, Open: m.chain}
}

// Closing is what Close writes in state s.
func (s MarkdownState) Closing() string {
	switch {
	case !s.Started:
		return "\n_No events yet._\n"
	case s.Open:
		return "\n"
	}
	return ""
}

// ContinueMarkdown carries on, on w, a transcript whose events so far
// left state s and whose closing (s.Closing) w does not hold: what it
// writes, then Close, is what one writer would have written after those
// events (the views append a transcript's new events this way).
func ContinueMarkdown(w io.Writer, s MarkdownState) *MarkdownWriter {
	m := &MarkdownWriter{w: bufio.NewWriter(w), chain: s.Open}
	if s.Started {
		m.n = 1
	}
	return m
}

// Events appends evs, in order, to the transcript.
func (m *MarkdownWriter) Events(evs []state.Event) error {
	for _, ev := range evs {
		m.n++
		for _, l := range Lines(ev) {
			m.line(l)
		}
	}
	return m.flush()
}

// Close ends the document.
func (m *MarkdownWriter) Close() error {
	m.w.WriteString(m.State().Closing())
	m.chain = false
	return m.flush()
}

// Flush writes what the writer holds to its io.Writer: everything but
// the closing, which only Close writes.
func (m *MarkdownWriter) Flush() error { return m.flush() }

func (m *MarkdownWriter) flush() error {
	if err := m.w.Flush(); err != nil {
		return fmt.Errorf("write transcript: %w", err)
	}
	return nil
}

// Markdown writes the whole transcript of spore id.
func Markdown(w io.Writer, id string, evs []state.Event) error {
	m := NewMarkdown(w, id)
	if err := m.Events(evs); err != nil {
		return err
	}
	return m.Close()
}

// block starts a block of its own (s ends in "\n"), after a blank line.
func (m *MarkdownWriter) block(s string) {
	if m.chain {
		m.w.WriteByte('\n')
		m.chain = false
	}
	m.w.WriteByte('\n')
	m.w.WriteString(s)
}

// entry adds a one-line entry to the current paragraph of entries, with a
// hard line break (a trailing backslash) after the one before.
func (m *MarkdownWriter) entry(s string) {
	if m.chain {
		m.w.WriteString("\\\n")
	} else {
		m.w.WriteByte('\n')
	}
	m.w.WriteString(s)
	m.chain = true
}

func (m *MarkdownWriter) line(l Line) {
	switch l.Kind {
	case KindPrompt, KindMessage:
		what := "prompt"
		if l.Kind == KindMessage {
			what = "message"
		}
		if l.From != "" {
			what += " from " + EscapeMarkdown(l.From)
		}
		m.block(fmt.Sprintf("**#%d %s** · %s\n", l.Seq, what, mdTime(l.At)))
		m.block(quote(body(l.Text)))
	case KindUserText:
		m.block(quote(body(l.Text)))
	case KindText:
		m.block(body(l.Text))
	case KindToolUse:
		m.entry("→ " + CodeSpan(l.Text))
	case KindToolResult:
		if l.Error {
			m.entry("← **error** " + CodeSpan(l.Text))
		} else {
			m.entry("← " + CodeSpan(l.Text))
		}
	case KindThinking:
		m.entry("~ _thinking:_ " + EscapeMarkdown(l.Text))
	case KindResult:
		mark := "✓ "
		if l.Error {
			mark = "✗ "
		}
		m.entry(mark + EscapeMarkdown(l.Text))
	case KindLifecycle, KindBreaker:
		m.entry(fmt.Sprintf("— %s (#%d, %s)", EscapeMarkdown(l.Text), l.Seq, mdTime(l.At)))
	case KindSession, KindSystem, KindBridge:
		mark := "· "
		if l.Error {
			mark = "! "
		}
		m.entry(mark + EscapeMarkdown(l.Text))
	default:
		m.entry("? " + CodeSpan(l.Text))
	}
}

func mdTime(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }

// quote puts a block in a block quote.
func quote(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(strings.TrimSuffix(s, "\n"), "\n") {
		if strings.TrimSpace(l) == "" {
			b.WriteString(">\n")
			continue
		}
		b.WriteString("> ")
		b.WriteString(strings.TrimSuffix(l, "\n"))
		b.WriteByte('\n')
	}
	return b.String()
}

// body is text (already clean) as a Markdown block ending in "\n"; see
// MarkdownWriter for what it changes and why.
func body(text string) string {
	var b strings.Builder
	var fence string // the open fence's run ("```", "~~~~"), "" outside one
	for _, l := range strings.Split(text, "\n") {
		switch {
		case fence != "":
			if closes(l, fence) {
				fence = ""
			}
			b.WriteString(l)
		case opens(l) != "":
			fence = opens(l)
			b.WriteString(l)
		default:
			b.WriteString(strings.ReplaceAll(escapeFenceLike(l), "<", "&lt;"))
		}
		b.WriteByte('\n')
	}
	if fence != "" {
		b.WriteString(fence + "\n")
	}
	return b.String()
}

// opens returns the fence run when l opens a fenced code block at the
// start of the line (CommonMark: three or more backticks or tildes; a
// backtick fence's info string has no backtick).
func opens(l string) string {
	run := fenceRun(l)
	if run == "" || run[0] == '`' && strings.Contains(l[len(run):], "`") {
		return ""
	}
	return run
}

// closes reports whether l closes a fence opened with run: up to three
// spaces, at least as long a run of the same character, then only blanks.
func closes(l, run string) bool {
	t := strings.TrimLeft(l, " ")
	if len(l)-len(t) > 3 {
		return false
	}
	r := fenceRun(t)
	return r != "" && r[0] == run[0] && len(r) >= len(run) && strings.TrimSpace(t[len(r):]) == ""
}

// fenceRun is the run of three or more '`' or '~' that s starts with.
func fenceRun(s string) string {
	if len(s) < 3 || s[0] != '`' && s[0] != '~' {
		return ""
	}
	n := 1
	for n < len(s) && s[n] == s[0] {
		n++
	}
	if n < 3 {
		return ""
	}
	return s[:n]
}

// escapeFenceLike backslash-escapes the first character of a fence that
// follows indentation or list and quote markers, so that no renderer sees
// a code block where body does not.
func escapeFenceLike(l string) string {
	i := 0
	for i < len(l) {
		switch c := l[i]; {
		case c == ' ' || c == '>':
			i++
		case (c == '-' || c == '+' || c == '*') && (i+1 == len(l) || l[i+1] == ' '):
			i++
		case c >= '0' && c <= '9':
			j := i
			for j < len(l) && l[j] >= '0' && l[j] <= '9' {
				j++
			}
			if j < len(l) && (l[j] == '.' || l[j] == ')') && (j+1 == len(l) || l[j+1] == ' ') {
				i = j + 1
				continue
			}
			return l
		default:
			if fenceRun(l[i:]) != "" {
				return l[:i] + `\` + l[i:]
			}
			return l
		}
	}
	return l
}

// EscapeMarkdown makes s (a name, a reason, a summary) safe inside a line
// of Markdown, in a table cell included: it is sanitized to one line, and
// the characters that would make emphasis, code, links, HTML or table
// columns of it are backslash-escaped, as are block markers at its start.
func EscapeMarkdown(s string) string {
	s = clean(s, false)
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '\\', '`', '*', '_', '[', ']', '<', '>', '|', '~', '&':
			b.WriteByte('\\')
		case '#':
			// At the start, a heading; after a blank, perhaps a
			// heading's closing sequence.
			if i == 0 || s[i-1] == ' ' {
				b.WriteByte('\\')
			}
		case '-', '+', '=':
			if i == 0 {
				b.WriteByte('\\')
			}
		case '.', ')':
			if i > 0 && strings.Trim(s[:i], "0123456789") == "" {
				b.WriteByte('\\')
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// CodeSpan puts s (one line) in a Markdown code span, fenced with more
// backticks than it holds in a row, so nothing in it is read as Markdown
// or HTML.
func CodeSpan(s string) string {
	s = clean(s, false)
	if strings.TrimSpace(s) == "" {
		return "`(empty)`"
	}
	longest, run := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if s[0] == '`' || s[len(s)-1] == '`' || s[0] == ' ' && s[len(s)-1] == ' ' {
		s = " " + s + " "
	}
	return fence + s + fence
}
