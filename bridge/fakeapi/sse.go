package fakeapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

func usage(u Usage, out int) map[string]int {
	return map[string]int{"input_tokens": u.Input, "output_tokens": out, "cache_creation_input_tokens": u.CacheCreation, "cache_read_input_tokens": u.CacheRead}
}

func stopReason(r Reply) string {
	if r.Tool != nil {
		return "tool_use"
	}
	return "end_turn"
}

// message is the non-streaming form of a reply.
func message(id, model string, r Reply) map[string]any {
	var content []any
	if r.Text != "" || r.Tool == nil {
		content = append(content, map[string]string{"type": "text", "text": r.Text})
	}
	if r.Tool != nil {
		content = append(content, map[string]any{"type": "tool_use", "id": "toolu_" + id, "name": r.Tool.Name, "input": json.RawMessage(r.inputJSON())})
	}
	return map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": content,
		"stop_reason": stopReason(r), "stop_sequence": nil, "usage": usage(r.usage(), r.usage().Output),
	}
}

// stream writes a reply as the Messages API's server-sent events,
// pausing r.Pause between them, and records in rec how far it got. It
// stops at the first event that cannot be written (its client is gone).
func stream(ctx context.Context, w http.ResponseWriter, id, model string, r Reply, rec answer) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	var events []func() error
	send := func(event string, data any) {
		events = append(events, func() error {
			b, _ := json.Marshal(data)
			if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
				return err
			}
			return rc.Flush()
		})
	}
	u := r.usage()
	send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": usage(u, 1),
	}})
	index := 0
	if r.Text != "" || r.Tool == nil {
		send("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]string{"type": "text", "text": ""}})
		for _, chunk := range chunks(r.Text, 3) {
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]string{"type": "text_delta", "text": chunk}})
		}
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	if r.Tool != nil {
		send("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{
			"type": "tool_use", "id": "toolu_" + id, "name": r.Tool.Name, "input": map[string]any{},
		}})
		for _, chunk := range chunks(r.inputJSON(), 2) {
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]string{"type": "input_json_delta", "partial_json": chunk}})
		}
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
	}
	delta := len(events)
	send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stopReason(r), "stop_sequence": nil}, "usage": map[string]int{"output_tokens": u.Output}})
	send("message_stop", map[string]any{"type": "message_stop"})

	for i, ev := range events {
		if i > 0 && r.Pause > 0 {
			select {
			case <-time.After(r.Pause):
			case <-ctx.Done():
				return
			}
		}
		if ev() != nil {
			return
		}
		switch i {
		case 0:
			rec.started()
		case delta:
			rec.delta()
		}
	}
}

// chunks splits s into at most n pieces on rune boundaries, so deltas
// look like a real stream without splitting a UTF-8 sequence.
func chunks(s string, n int) []string {
	runes := []rune(s)
	if len(runes) == 0 {
		return []string{""}
	}
	size := (len(runes) + n - 1) / n
	var out []string
	for i := 0; i < len(runes); i += size {
		end := min(i+size, len(runes))
		out = append(out, string(runes[i:end]))
	}
	return out
}
