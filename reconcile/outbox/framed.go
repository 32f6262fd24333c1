package outbox

import (
	"fmt"

	"github.com/sporectl/sporectl/bridge"
)

// A bridge takes a prompt of at most bridge.MaxPromptBytes, and what it
// is given is the framed text (Compose: the sender's mark, the sender's
// text with every mark-shaped token rewritten as Quoted, the note), which
// can be longer than the text: "[from" (5 bytes) becomes "[quoted: from"
// (13). So the bound is checked on the framed text, in record, which
// every sender goes through (Send, SendOnce, Record): an entry no
// bridge would take is refused before it is written, instead of waiting
// at the head of its spore's outbox for ever (docs/bridge.md "Delivery").

// TooLargeError refuses a message whose framed text is over the bridge's
// bound; nothing was recorded. Text is the size of the sender's own text.
type TooLargeError struct {
	To           string
	Text, Framed int
	Max          int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the message to spore %s is %d bytes as the agent would read it (its %d bytes with each \"[from\" rewritten as %q, and any mark and note); a bridge takes at most %d: nothing was sent",
		e.To, e.Framed, e.Text, Quoted, e.Max)
}

// CheckFramed is nil when a bridge takes m as Compose frames it, else
// the *TooLargeError record would return: the check a sender can make
// before it writes anything (`sporectl prompt`, the page's prompt box).
func CheckFramed(m Message) *TooLargeError {
	return checkFramed(m, Compose(m))
}

func checkFramed(m Message, framed string) *TooLargeError {
	if len(framed) <= bridge.MaxPromptBytes {
		return nil
	}
	return &TooLargeError{To: m.To, Text: len(m.Text), Framed: len(framed), Max: bridge.MaxPromptBytes}
}
