package fakeapi

import (
	"encoding/json"
	"strings"
)

// Request is what the fake saw of one POST /v1/messages.
type Request struct {
	Model string `json:"model"`
	// System is the system prompt: a string or a list of text blocks.
	System    json.RawMessage `json:"system"`
	Stream    bool            `json:"stream"`
	MaxTokens int             `json:"max_tokens"`
	Messages  []Message       `json:"messages"`
	Tools     []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

// Message is one conversation message of a request.
type Message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type block struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Content json.RawMessage `json:"content"`
}

// blocks returns a message's content as blocks; a plain string becomes one
// text block.
func (m Message) blocks() []block {
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return []block{{Type: "text", Text: s}}
	}
	var bs []block
	_ = json.Unmarshal(m.Content, &bs)
	return bs
}

// Text is the concatenated text of a message's text blocks.
func (m Message) Text() string {
	var b strings.Builder
	for _, bl := range m.blocks() {
		if bl.Type == "text" {
			b.WriteString(bl.Text)
		}
	}
	return b.String()
}

// isPrompt reports whether m is a user message that a person wrote, as
// opposed to one carrying only tool results back to the model.
func (m Message) isPrompt() bool {
	if m.Role != "user" {
		return false
	}
	for _, bl := range m.blocks() {
		if bl.Type == "tool_result" {
			return false
		}
	}
	return true
}

// Prompt returns the newest prompt of the request and how many assistant
// messages follow it (the step of the scripted conversation).
func (r Request) Prompt() (text string, step int) {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := r.Messages[i]
		if m.Role == "assistant" {
			step++
			continue
		}
		if m.isPrompt() {
			return m.Text(), step
		}
	}
	return "", step
}

// Contains reports whether any message of the request contains s; tests
// use it to see that a resumed session carried its history.
func (r Request) Contains(s string) bool {
	for _, m := range r.Messages {
		if strings.Contains(string(m.Content), s) {
			return true
		}
	}
	return false
}

// SystemText is the system prompt's text, its blocks joined.
func (r Request) SystemText() string {
	return Message{Content: r.System}.Text()
}
