// mkv4 writes a format-4 dir store with a bit of everything, and a JSON
// dump of what it holds, using the format-4 code (sporectl at 60d1279).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
	"github.com/sporectl/sporectl/state/storetest"
)

func main() {
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(out string) error {
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { now = now.Add(time.Second); return now }
	root := filepath.Join(out, "store")
	settings := state.Settings{Runtime: "local", Agent: "echo",
		DefaultSpec: state.Spec{CPU: "2", Memory: "3Gi", Storage: "5Gi"},
		Recovery:    state.RecoveryPolicy{BackoffMax: state.Duration(30 * time.Minute), BreakerFailures: 3}}
	settings = settings.WithOperators([]state.OperatorToken{{Name: "alice", Hash: state.HashToken("spo_fixture"),
		Session: state.SessionHash(state.OperatorSessionKey("spo_fixture")), Created: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}})
	s, _, err := dirstore.Init(ctx, root, settings, dirstore.Options{Now: clock, CompactBytes: 3000})
	if err != nil {
		return err
	}
	base := time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)
	err = s.Update(ctx, func(tx state.Tx) error {
		for _, id := range []string{"alpha", "beta", "boss", "gone"} {
			sp := storetest.Spore(id)
			switch id {
			case "alpha":
				sp.Desired, sp.Generation = state.Running, 2
				sp.Activity = []state.HourActivity{
					{Hour: base.Add(-2 * time.Hour), Turns: 3, ToolCalls: 7, InputTokens: 1200, OutputTokens: 340, CostMicros: 51000},
					{Hour: base, Turns: 1, OutputTokens: 12},
				}
			case "beta":
				sp.Rank, sp.Swarm, sp.Role = state.RankSwarm, "team", "lead"
				sp.Restarts, sp.BreakerOpen, sp.BridgeSeq = 3, true, 42
				sp.Failures = []time.Time{base, base.Add(time.Minute)}
				sp.NotBefore = base.Add(time.Hour)
				sp.Generation, sp.Health, sp.HealthReason = 5, "Dead", "OOMKilled"
				sp.Loop, sp.LoopDue = state.Duration(30*time.Minute), base.Add(90*time.Minute)
			case "boss":
				sp.Rank, sp.Desired, sp.Generation, sp.Health = state.RankArch, state.Running, 1, "Healthy"
				sp.Incidents = []state.Incident{
					{Key: "collision:src/main.go:alpha,beta", At: base.Add(-time.Hour)},
					{Key: "breaker:beta", At: base},
				}
			}
			if err := tx.CreateSpore(ctx, sp); err != nil {
				return err
			}
			if _, err := tx.Append(ctx, id, []state.Event{{Kind: state.KindLifecycle, Action: "created", Text: "colony default"}}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	err = s.Update(ctx, func(tx state.Tx) error {
		if _, err := tx.Append(ctx, "alpha", []state.Event{
			{Kind: state.KindPrompt, From: "user:alice", Text: "hello 🍄"},
			{Kind: state.KindAgent, BridgeSeq: 1, Line: json.RawMessage(`{"type":"assistant","text":"<hi> & bye"}`)},
		}); err != nil {
			return err
		}
		if _, err := tx.Enqueue(ctx, state.OutboxEntry{ID: "m1", Spore: "alpha", From: "spore:beta", Text: "ping", Wake: true}); err != nil {
			return err
		}
		if _, err := tx.Enqueue(ctx, state.OutboxEntry{ID: "m2", Spore: "beta", From: "user:alice", Text: "pong"}); err != nil {
			return err
		}
		return tx.SetTokenHash(ctx, "alpha", state.HashToken("spt_fixture"))
	})
	if err != nil {
		return err
	}
	if err := s.Update(ctx, func(tx state.Tx) error { return tx.DeleteSpore(ctx, "gone") }); err != nil {
		return err
	}
	// Records in the live commit log: an event, a changed spore, a
	// settings change.
	err = s.Update(ctx, func(tx state.Tx) error {
		_, err := tx.Append(ctx, "beta", []state.Event{{Kind: state.KindBreaker, Action: "opened", Text: "3 failures"}})
		return err
	})
	if err != nil {
		return err
	}
	err = s.Update(ctx, func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, "alpha")
		if err != nil {
			return err
		}
		sp.Activity[1].Turns, sp.Activity[1].ToolCalls = 2, 1
		sp.Health = "Healthy"
		return tx.UpdateSpore(ctx, sp)
	})
	if err != nil {
		return err
	}
	err = s.Update(ctx, func(tx state.Tx) error {
		st, err := tx.Settings(ctx)
		if err != nil {
			return err
		}
		st.Recovery.HealthyAfter = state.Duration(20 * time.Minute)
		return tx.PutSettings(ctx, st)
	})
	if err != nil {
		return err
	}
	d, err := storetest.ReadAll(ctx, s)
	if err != nil {
		return err
	}
	// One line, no HTML escaping: indenting would reformat the agent's
	// line, which must read back byte for byte.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "dump.json"), b.Bytes(), 0o644)
}
