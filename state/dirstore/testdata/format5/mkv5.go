// mkv5 writes a format-5 dir store with queued outboxes, and a JSON dump
// of what it holds, using the format-5 code (sporectl at aa3812c).
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
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { now = now.Add(time.Second); return now }
	root := filepath.Join(out, "store")
	settings := state.Settings{Runtime: "local", Agent: "echo",
		DefaultSpec: state.Spec{CPU: "2", Memory: "3Gi", Storage: "5Gi"}}
	s, _, err := dirstore.Init(ctx, root, settings, dirstore.Options{Now: clock, CompactBytes: 2000})
	if err != nil {
		return err
	}
	err = s.Update(ctx, func(tx state.Tx) error {
		for _, id := range []string{"alpha", "beta"} {
			sp := storetest.Spore(id)
			sp.Desired, sp.Generation = state.Running, 1
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
	// Queued messages (a compaction after them puts them in the
	// snapshot).
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
