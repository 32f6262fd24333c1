package bridge

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Every prompt and message ends as a bridge's prompt (POST /v1/prompts),
// so what a bridge takes as text is decided here, once, and checked by
// everything that accepts a text before it writes anything: the bridge
// itself, serve's message routes (mycelia), the page's prompt box
// (mycelia/ui), `sporectl prompt` and the in-pod commands (cmd/cli). Each
// caller gives its own bound (MaxPromptBytes, or serve's smaller one for
// a message) and words the refusal its own way, from the TextError.

// Problems of a text, in the order CheckText looks for them.
const (
	TextInvalidUTF8 = "not valid UTF-8"
	TextEmpty       = "empty"
	TextTooLarge    = "too large"
	TextControl     = "control character"
)

// TextError is a text CheckText refuses.
type TextError struct {
	// Problem is one of the Text* constants.
	Problem string
	// Len and Max are the text's length and the bound (TextTooLarge).
	Len, Max int
	// Rune is the control character and At its byte offset (TextControl).
	Rune rune
	At   int
}

func (e *TextError) Error() string { return e.Of("the text") }

// Of words the refusal for a text its caller names ("the prompt").
func (e *TextError) Of(what string) string {
	switch e.Problem {
	case TextTooLarge:
		return fmt.Sprintf("%s is %d bytes; at most %d are allowed", what, e.Len, e.Max)
	case TextControl:
		return fmt.Sprintf("%s holds the control character U+%04X at byte %d (only newline and tab are allowed)", what, e.Rune, e.At)
	}
	return what + " is " + e.Problem
}

// CheckText refuses a text that is not valid UTF-8, is blank (white space
// only), is longer than max bytes, or holds a control character other
// than newline and tab (C0, DEL, C1: a carriage return too, so a text
// shows the same in a terminal, the page and the agent's prompt). It
// returns nil for a text every part of sporectl takes.
func CheckText(text string, max int) *TextError {
	switch {
	case !utf8.ValidString(text):
		return &TextError{Problem: TextInvalidUTF8}
	case strings.TrimSpace(text) == "":
		return &TextError{Problem: TextEmpty}
	case len(text) > max:
		return &TextError{Problem: TextTooLarge, Len: len(text), Max: max}
	}
	for i, r := range text {
		switch {
		case r == '\n' || r == '\t':
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			return &TextError{Problem: TextControl, Rune: r, At: i}
		}
	}
	return nil
}
