package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/agent"
)

const testToken = "test-token-0123456789abcdef"

// harness is one bridge in this process, over an httptest server.
type harness struct {
	t      testing.TB
	home   string
	srv    *Server
	ts     *httptest.Server
	client *bridge.Client
	stop   func()
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimSuffix(string(b), "\n"))
	return len(b), nil
}

// startBridge runs a bridge over home until the test ends (or h.stop).
func startBridge(t *testing.T, home string, ag agent.Starter, tweak func(*Config)) *harness {
	t.Helper()
	cfg := Config{Home: home, Token: testToken, Agent: ag, Logger: testLogger(t),
		BackoffBase: 50 * time.Millisecond, BackoffMax: 200 * time.Millisecond}
	if tweak != nil {
		tweak(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := New(ctx, cfg)
	require.NoError(t, err)
	h := newHTTPHarness(t, srv)
	ts := h.ts
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.RunAgent(ctx)
	}()
	stopped := false
	h.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		<-done
		ts.Close()
		require.NoError(t, srv.Close())
	}
	t.Cleanup(h.stop)
	return h
}

// newHTTPHarness serves srv over httptest, with a client.
func newHTTPHarness(tb testing.TB, srv *Server) *harness {
	ts := httptest.NewServer(srv.Handler())
	client, err := bridge.NewClient(ts.URL, testToken, ts.Client())
	require.NoError(tb, err)
	return &harness{t: tb, home: srv.cfg.Home, srv: srv, ts: ts, client: client}
}

// prompt posts a prompt and requires it accepted.
func (h *harness) prompt(id, text string) bridge.PromptAccepted {
	h.t.Helper()
	a, err := h.client.Prompt(context.Background(), bridge.PromptRequest{ID: id, From: "user:test", Text: text})
	require.NoError(h.t, err)
	return a
}

// until reads events from after on until cond holds for the lines read
// so far, and returns them all.
func (h *harness) until(after uint64, timeout time.Duration, cond func([]bridge.Event) bool) []bridge.Event {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var all []bridge.Event
	for !cond(all) {
		page, err := h.client.Events(ctx, after, 0, 200*time.Millisecond)
		if ctx.Err() != nil {
			h.t.Fatalf("condition not met in %s; read %d lines: %s", timeout, len(all), tail(all))
		}
		require.NoError(h.t, err)
		if len(page.Events) > 0 {
			all = append(all, page.Events...)
			after = page.Events[len(page.Events)-1].Seq
		}
	}
	return all
}

// waitStatus polls status until cond holds.
func (h *harness) waitStatus(timeout time.Duration, cond func(bridge.Status) bool) bridge.Status {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		st, err := h.client.Status(context.Background())
		require.NoError(h.t, err)
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("status condition not met in %s; last %+v", timeout, st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lineField decodes field of a line that is a JSON object, "" otherwise.
func lineField(e bridge.Event, field string) string {
	var m map[string]any
	if json.Unmarshal(e.Line, &m) != nil {
		return ""
	}
	s, _ := m[field].(string)
	return s
}

func countType(evs []bridge.Event, typ, subtype string) int {
	n := 0
	for _, e := range evs {
		if lineField(e, "type") == typ && (subtype == "" || lineField(e, "subtype") == subtype) {
			n++
		}
	}
	return n
}

func hasType(typ, subtype string, n int) func([]bridge.Event) bool {
	return func(evs []bridge.Event) bool { return countType(evs, typ, subtype) >= n }
}

// requireContiguous checks numbering: from first on, no gap, no repeat.
func requireContiguous(t *testing.T, evs []bridge.Event, first uint64) {
	t.Helper()
	for i, e := range evs {
		require.Equal(t, first+uint64(i), e.Seq, "line %d of %d", i, len(evs))
	}
}

func tail(evs []bridge.Event) string {
	var b strings.Builder
	for _, e := range evs[max(0, len(evs)-12):] {
		line := string(e.Line)
		if len(line) > 300 {
			line = line[:300] + "…"
		}
		b.WriteString("\n  ")
		b.WriteString(line)
	}
	return b.String()
}

// script writes an executable shell script standing in for claude.
func script(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.sh")
	require.NoError(t, os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755))
	return path
}
