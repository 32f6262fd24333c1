package server

import (
	"bytes"

	"github.com/sporectl/sporectl/bridge/streamjson"
)

// turnWatch notes what a turn's lines say about the turn: whether it
// reached its result (else the agent died mid-turn) and whether it ended
// waiting for a person. Only lines that may matter are parsed, so a fast
// agent is not slowed down by the watch.
type turnWatch struct {
	sawResult bool
	blocked   bool
	// lines counts the turn's lines: an agent that wrote none did not
	// start (agentfail.go).
	lines int
}

// AskUserQuestion is the tool Claude Code uses to ask the person a
// question; in a headless turn it means the agent waits for an answer.
const askTool = "AskUserQuestion"

func (w *turnWatch) see(line []byte) {
	w.lines++
	if !bytes.Contains(line, []byte(`"type"`)) {
		return
	}
	if !bytes.Contains(line, []byte(`"result"`)) && !bytes.Contains(line, []byte(`permission_denied`)) &&
		!bytes.Contains(line, []byte(askTool)) {
		return
	}
	for _, e := range streamjson.Parse(line) {
		switch e.Kind {
		case streamjson.KindResult:
			w.sawResult = true
			if e.Result.PermissionDenials > 0 {
				w.blocked = true
			}
		case streamjson.KindSystem:
			if e.Subtype == "permission_denied" {
				w.blocked = true
			}
		case streamjson.KindToolUse:
			if e.ToolUse.Name == askTool {
				w.blocked = true
			}
		}
	}
}
