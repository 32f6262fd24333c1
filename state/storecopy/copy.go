// Package storecopy copies a colony's whole state from one state.Store to
// another — directory to Postgres, Postgres to directory, or between two of
// a kind — through the state.Store interface alone, so it needs to know no
// backend.
//
// It owns nothing persistent. It must never write to a destination that
// already holds spores (a copy is not a merge), and never write to the
// source.
package storecopy

import (
	"context"
	"errors"
	"fmt"

	"github.com/sporectl/sporectl/state"
)

// ErrNotEmpty: the destination already holds spores.
var ErrNotEmpty = errors.New("destination store is not empty")

// eventPage bounds how many events are read from the source at once. What
// the destination holds until its one transaction commits is its own
// business: PostgreSQL sends each page on, while a directory store keeps
// the whole copied history in memory until commit (docs/cli.md).
const eventPage = 5000

// Copy reads from in one snapshot (a View) and writes to in one Update, so
// the destination gets all of it or none of it, and a copy taken while
// writers run is still consistent. Settings (with the recovery policy),
// spores (with their recovery bookkeeping, wish generation and last
// recorded health), every event with its original sequence number and
// time, the outbox in order, and token hashes are copied.
//
// Times keep the precision of the destination: Postgres stores
// microseconds, so nanoseconds from a directory store are truncated.
func Copy(ctx context.Context, from, to state.Store) error {
	src, dst := from.Info(), to.Info()
	err := from.View(ctx, func(in state.Tx) error {
		return to.Update(ctx, func(out state.Tx) error {
			existing, err := out.Spores(ctx)
			if err != nil {
				return fmt.Errorf("list destination spores: %w", err)
			}
			if len(existing) > 0 {
				return fmt.Errorf("%w: it holds %d spores", ErrNotEmpty, len(existing))
			}
			settings, err := in.Settings(ctx)
			if err != nil {
				return fmt.Errorf("read settings: %w", err)
			}
			if err := out.PutSettings(ctx, settings); err != nil {
				return fmt.Errorf("write settings: %w", err)
			}
			spores, err := in.Spores(ctx)
			if err != nil {
				return fmt.Errorf("list spores: %w", err)
			}
			for _, sp := range spores {
				if err := copySpore(ctx, in, out, sp); err != nil {
					return fmt.Errorf("copy spore %s: %w", sp.ID, err)
				}
			}
			return nil
		})
	})
	if err != nil {
		return fmt.Errorf("copy store %s %s to %s %s: %w", src.Backend, src.Location, dst.Backend, dst.Location, err)
	}
	return nil
}

func copySpore(ctx context.Context, in, out state.Tx, sp state.Spore) error {
	if err := out.CreateSpore(ctx, sp); err != nil {
		return err
	}
	head, err := in.Head(ctx, sp.ID)
	if err != nil {
		return fmt.Errorf("read head: %w", err)
	}
	var after uint64
	for {
		evs, err := in.Events(ctx, sp.ID, after, eventPage)
		if err != nil {
			return fmt.Errorf("read events after %d: %w", after, err)
		}
		if len(evs) == 0 {
			break
		}
		written, err := out.Append(ctx, sp.ID, evs)
		if err != nil {
			return fmt.Errorf("write events after %d: %w", after, err)
		}
		// Append numbers events itself; on a fresh spore it must give
		// back the source's numbers, or the source has gaps.
		for i := range evs {
			if written[i].Seq != evs[i].Seq {
				return fmt.Errorf("source event %d would become %d: the source log has a gap (run `sporectl check`)", evs[i].Seq, written[i].Seq)
			}
		}
		after = evs[len(evs)-1].Seq
	}
	if after != head.LastSeq {
		return fmt.Errorf("source head says %d events, its log ends at %d (run `sporectl check`)", head.LastSeq, after)
	}
	// Dead letters first, then the queue: each list keeps its order (the
	// two are read apart, so how they interleaved is not kept).
	dead, err := in.DeadLetters(ctx, sp.ID)
	if err != nil {
		return fmt.Errorf("read dead letters: %w", err)
	}
	for _, e := range dead {
		d := *e.Dead
		e.Dead = nil
		if _, err := out.Enqueue(ctx, e); err != nil {
			return fmt.Errorf("write dead letter %s: %w", e.ID, err)
		}
		if err := out.Bury(ctx, sp.ID, e.ID, d); err != nil {
			return fmt.Errorf("write dead letter %s: %w", e.ID, err)
		}
	}
	entries, err := in.Outbox(ctx, sp.ID)
	if err != nil {
		return fmt.Errorf("read outbox: %w", err)
	}
	for _, e := range entries {
		if _, err := out.Enqueue(ctx, e); err != nil {
			return fmt.Errorf("write outbox entry %s: %w", e.ID, err)
		}
	}
	h, err := in.TokenHash(ctx, sp.ID)
	switch {
	case errors.Is(err, state.ErrNotFound):
	case err != nil:
		return fmt.Errorf("read token hash: %w", err)
	default:
		if err := out.SetTokenHash(ctx, sp.ID, h); err != nil {
			return fmt.Errorf("write token hash: %w", err)
		}
	}
	return nil
}
