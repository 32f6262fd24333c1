package transcript

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sporectl/sporectl/state"
)

// TextOptions shape WriteText's output.
type TextOptions struct {
	// Timestamps adds each event's time (UTC, to the second) after its seq.
	Timestamps bool
}

// seqWidth is the least width of the seq column, so that lines of
// separate calls (chat --follow) line up.
const seqWidth = 6

// WriteText writes the conversation for a terminal: one display line per
// output line, each prefixed with the event's seq, then a marker saying
// what it is ("> [user:alice]" a prompt, "→" a tool call, "←" its result,
// "✓"/"✗" a turn's end, "—" a lifecycle note, "·" a system or bridge
// line, "?" a line not understood) and the text; a text of several lines
// continues on lines indented to where its first line's text began. The
// output never holds a control character other than "\n" and depends only
// on evs and opt.
func WriteText(w io.Writer, evs []state.Event, opt TextOptions) error {
	bw := bufio.NewWriter(w)
	for _, ev := range evs {
		for _, l := range Lines(ev) {
			writeTextLine(bw, l, opt)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write transcript: %w", err)
	}
	return nil
}

func writeTextLine(w *bufio.Writer, l Line, opt TextOptions) {
	prefix := fmt.Sprintf("%*d  ", seqWidth, l.Seq)
	if opt.Timestamps {
		prefix += l.At.UTC().Format(time.DateTime) + "  "
	}
	prefix += textMarker(l)
	indent := strings.Repeat(" ", utf8.RuneCountInString(prefix))
	for i, part := range strings.Split(l.Text, "\n") {
		if i == 0 {
			w.WriteString(prefix)
		} else if part != "" {
			w.WriteString(indent)
		}
		w.WriteString(part)
		w.WriteByte('\n')
	}
}

// textMarker says what a line is, in front of its text.
func textMarker(l Line) string {
	switch l.Kind {
	case KindPrompt, KindMessage:
		if l.From == "" {
			return "> "
		}
		return "> [" + l.From + "] "
	case KindUserText:
		return "» "
	case KindText:
		return ""
	case KindThinking:
		return "~ "
	case KindToolUse:
		return "→ "
	case KindToolResult:
		if l.Error {
			return "← error: "
		}
		return "← "
	case KindResult:
		if l.Error {
			return "✗ "
		}
		return "✓ "
	case KindLifecycle, KindBreaker:
		return "— "
	case KindSession, KindSystem, KindBridge:
		if l.Error {
			return "! "
		}
		return "· "
	}
	return "? "
}
