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
// key, no network and no Claude Code. Its result line reports usage as
// Claude Code's does (usage, total_cost_usd), so budgets are counted as in
// production: one input token per word of the prompt, one output token
// per word of the answer, EchoCostPerToken each.
type Echo struct{}

var _ Starter = Echo{}

// EchoCostPerToken is what Echo reports each token cost: $0.000001.
const EchoCostPerToken = 0.000001

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
			in, out := len(strings.Fields(t.Prompt)), len(strings.Fields("echo: "+t.Prompt))
			write(map[string]any{"type": "result", "subtype": "success", "is_error": false, "session_id": t.SessionID,
				"result": "echo: " + t.Prompt, "num_turns": 1, "total_cost_usd": float64(in+out) * EchoCostPerToken,
				"duration_ms": time.Since(start).Milliseconds(), "usage": map[string]int{"input_tokens": in, "output_tokens": out}})
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
