package agent

import (
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"time"
)

// EchoModel is the model name every Echo line carries, so nobody mistakes
// a demo transcript for Claude's.
const EchoModel = "sporectl-echo (built-in demo agent, not Claude)"

// Echo is the built-in demo agent: it answers each prompt with "echo: "
// and the prompt, in Claude Code's stream-json shape (init, assistant,
// result). "/compact" gets a compact_boundary line instead. It needs no
// key, no network and no Claude Code.
type Echo struct{}

var _ Starter = Echo{}

// Name is KindEcho.
func (Echo) Name() string { return KindEcho }

// Start runs one turn in a goroutine.
func (Echo) Start(ctx context.Context, t Turn) (Process, error) {
	r, w := io.Pipe()
	p := &echoProcess{r: r, done: make(chan struct{}), stop: make(chan struct{})}
	go func() {
		defer close(p.done)
		start := time.Now()
		enc := json.NewEncoder(w)
		write := func(v any) bool {
			select {
			case <-p.stop:
				return false
			default:
			}
			return enc.Encode(v) == nil
		}
		ok := write(map[string]any{"type": "system", "subtype": "init", "session_id": t.SessionID,
			"model": EchoModel, "cwd": t.Home, "tools": []string{}, "agent": KindEcho})
		if ok && strings.TrimSpace(t.Prompt) == "/compact" {
			ok = write(map[string]any{"type": "system", "subtype": "compact_boundary", "session_id": t.SessionID,
				"compact_metadata": map[string]any{"trigger": "manual"}})
		} else if ok {
			ok = write(map[string]any{"type": "assistant", "session_id": t.SessionID, "message": map[string]any{
				"role": "assistant", "model": EchoModel,
				"content": []any{map[string]string{"type": "text", "text": "echo: " + t.Prompt}},
			}})
		}
		if ok {
			write(map[string]any{"type": "result", "subtype": "success", "is_error": false, "session_id": t.SessionID,
				"result": "echo: " + t.Prompt, "num_turns": 1, "total_cost_usd": 0,
				"duration_ms": time.Since(start).Milliseconds(), "usage": map[string]int{"input_tokens": 0, "output_tokens": 0}})
		}
		w.Close()
	}()
	return p, nil
}

type echoProcess struct {
	r    *io.PipeReader
	done chan struct{}
	stop chan struct{}
	once sync.Once
}

func (p *echoProcess) Stdout() io.Reader { return p.r }
func (p *echoProcess) PID() int          { return 0 }
func (p *echoProcess) Interrupt() error {
	p.once.Do(func() { close(p.stop) })
	return nil
}
func (p *echoProcess) Wait() error { <-p.done; return nil }
