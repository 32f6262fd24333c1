package cli

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
	"github.com/sporectl/sporectl/state/storetest"
)

// Command-level benchmarks: the whole command as a user runs it, minus
// process start (see docs/performance.md for that).

func benchRun(b *testing.B, store string, args ...string) {
	f := NewFactory(IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
	f.Getenv = func(k string) string {
		if k == EnvStore {
			return store
		}
		return ""
	}
	if code := RunWith(context.Background(), f, args); code != 0 {
		b.Fatalf("sporectl %v exited %d", args, code)
	}
}

func buildFleet(b testing.TB, root string, spores int) {
	ctx := context.Background()
	s := statetest.DirAt(b, root, state.Settings{Runtime: "local"})
	// Created in transactions of 100, as a colony grows, so the store is
	// in the state its compaction policy leaves it.
	for done := 0; done < spores; done += 100 {
		err := s.Update(ctx, func(tx state.Tx) error {
			for i := done; i < min(done+100, spores); i++ {
				sp := storetest.Spore(fmt.Sprintf("spore-%05d", i))
				sp.Colony = fmt.Sprintf("colony-%d", i%10)
				if err := tx.CreateSpore(ctx, sp); err != nil {
					return err
				}
				if _, err := tx.Append(ctx, sp.ID, []state.Event{{Kind: state.KindLifecycle, Action: "created"}}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStatusFleet runs `status -o json` and `status` (table) over a
// fleet of 100 (the baseline) and 10,000 spores.
func BenchmarkStatusFleet(b *testing.B) {
	dir := b.TempDir()
	for _, n := range []int{100, 10000} {
		root := filepath.Join(dir, strconv.Itoa(n))
		buildFleet(b, root, n)
		for _, o := range []string{"json", "table"} {
			b.Run(fmt.Sprintf("spores=%d/o=%s", n, o), func(b *testing.B) {
				for b.Loop() {
					benchRun(b, root, "status", "-o", o)
				}
			})
		}
	}
}

// BenchmarkHistoryCommands runs `status ID` and `events ID --since N` for
// the newest 50 events of a spore with 1,000 and 1,000,000 events.
func BenchmarkHistoryCommands(b *testing.B) {
	dir := b.TempDir()
	ctx := context.Background()
	for _, n := range []int{1000, 1000000} {
		root := filepath.Join(dir, strconv.Itoa(n))
		s := statetest.DirAt(b, root, state.Settings{Runtime: "local"})
		statetest.Create(b, s, storetest.Spore("talker"))
		if err := storetest.AppendHistory(ctx, s, "talker", n, 100); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("status/events=%d", n), func(b *testing.B) {
			for b.Loop() {
				benchRun(b, root, "status", "talker", "-o", "json")
			}
		})
		b.Run(fmt.Sprintf("events-since/events=%d", n), func(b *testing.B) {
			for b.Loop() {
				benchRun(b, root, "events", "talker", "--since", strconv.Itoa(n-50), "-o", "json")
			}
		})
	}
}
