// mkv7 writes a format-7 dir store whose spores have activity, the
// model gateway's count, a status written by a pass and outboxes with a
// dead letter, and whose settings hold a colony's budget and egress, and
// a JSON dump of what it holds, using the format-7 code of before a
// colony's scheduled prompts (sporectl at 6621b51).
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
	now := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	clock := func() time.Time { now = now.Add(time.Second); return now }
	root := filepath.Join(out, "store")
	settings := state.Settings{Runtime: "local", Agent: "echo",
		DefaultSpec: state.Spec{CPU: "2", Memory: "3Gi", Storage: "5Gi"}}.
		WithColony("default", state.ColonySettings{Budget: state.Budget{TokensPerDay: 5_000_000}, Egress: state.EgressNone})
	s, _, err := dirstore.Init(ctx, root, settings, dirstore.Options{Now: clock, CompactBytes: 2000})
	if err != nil {
		return err
	}
	hour := time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)
	err = s.Update(ctx, func(tx state.Tx) error {
		for _, id := range []string{"alpha", "beta"} {
			sp := storetest.Spore(id)
			sp.Desired, sp.Generation = state.Running, 1
			sp.Budget = state.Budget{TokensPerDay: 2_000_000}
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
	// What a pass wrote: the bridge's reported activity, health.
	err = s.Update(ctx, func(tx state.Tx) error {
		_, err := state.UpdateStatus(ctx, tx, "alpha", func(_ state.Spore, st *state.Status) error {
			st.Activity = []state.HourActivity{{Hour: hour, Turns: 3, ToolCalls: 9, InputTokens: 12_000, OutputTokens: 800, CostMicros: 51_000, StoredBytes: 4096}}
			st.Health, st.BridgeSeq = "Healthy", 12
			return nil
		})
		if err != nil {
			return err
		}
		_, err = state.CountModelCall(ctx, tx, "alpha", "msg_1", state.Usage{InputTokens: 300, OutputTokens: 40, CostMicros: 1200}, hour.Add(10*time.Minute))
		return err
	})
	if err != nil {
		return err
	}
	for i, e := range []state.OutboxEntry{
		{ID: "m1", Spore: "alpha", From: "spore:beta", Text: "ping", Wake: true},
		{ID: "m2", Spore: "alpha", From: "user:alice", Text: "[quoted: from me] hello 🍄", OverBudget: true},
		{ID: "m3", Spore: "beta", From: "user:alice", Text: "pong"},
	} {
		err = s.Update(ctx, func(tx state.Tx) error {
			if _, err := tx.Append(ctx, e.Spore, []state.Event{{Kind: state.KindPrompt, From: e.From, Text: e.Text}}); err != nil {
				return err
			}
			_, err := tx.Enqueue(ctx, e)
			return err
		})
		if err != nil {
			return fmt.Errorf("entry %d: %w", i, err)
		}
	}
	err = s.Update(ctx, func(tx state.Tx) error {
		return tx.Bury(ctx, "beta", "m3", state.DeadLetter{Reason: "the bridge answered 413", At: hour.Add(30 * time.Minute)})
	})
	if err != nil {
		return err
	}
	d, err := storetest.ReadAll(ctx, s)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "dump.json"), b.Bytes(), 0o644)
}
