package wish_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

func TestResetClosesTheBreakerWithANewGeneration(t *testing.T) {
	crashes := []time.Time{now.Add(-3 * time.Minute), now.Add(-2 * time.Minute)}
	tests := []struct {
		name    string
		sp      state.Spore
		wantSeq uint64
		text    string
	}{
		{"breaker open", state.Spore{Status: state.Status{HealthRecord: state.HealthRecord{BreakerOpen: true, Failures: crashes, NotBefore: now.Add(time.Hour), Health: "Error", HealthReason: "CrashLoop"}, IngestRecord: state.IngestRecord{BridgeSeq: 7}}},
			7, "breaker closed, crash history forgotten"},
		{"breaker closed", state.Spore{Status: state.Status{HealthRecord: state.HealthRecord{Failures: crashes[:1], NotBefore: now.Add(time.Minute), Health: "Dead"}, IngestRecord: state.IngestRecord{BridgeSeq: 7}}},
			7, "crash history forgotten (the breaker was closed)"},
		{"bridge log lost", state.Spore{Status: state.Status{HealthRecord: state.HealthRecord{Health: "Error", HealthReason: string(reconcile.ReasonBridgeLogLost)}, IngestRecord: state.IngestRecord{BridgeSeq: 42}}},
			0, "crash history forgotten (the breaker was closed); the bridge's new log is accepted: ingest restarts from its line 1 (the store holds the old log's lines up to 42)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, st state.Store) {
				tt.sp.ID, tt.sp.Desired, tt.sp.Generation = "a", state.Running, 9
				put(t, st, tt.sp)
				require.NoError(t, update(st, func(ctx context.Context, tx state.Tx) error { return wish.Reset(ctx, tx, "a", now) }))
				sp, evs := read(t, st, "a")
				require.False(t, sp.BreakerOpen)
				require.Empty(t, sp.Failures)
				require.True(t, sp.NotBefore.IsZero())
				require.Empty(t, sp.Health)
				require.Empty(t, sp.HealthReason)
				require.Equal(t, tt.wantSeq, sp.BridgeSeq)
				require.Equal(t, state.Running, sp.Desired, "reset keeps the desired state")
				require.Equal(t, uint64(10), sp.Generation)
				require.Equal(t, now, sp.Updated)
				require.Equal(t, []state.Event{{Seq: 1, Kind: state.KindBreaker, Action: "reset", At: now, Text: tt.text}}, evs)
			})
		})
	}
}

func TestResetOfAMissingSporeIsNotFound(t *testing.T) {
	eachBackend(t, func(t *testing.T, st state.Store) {
		err := update(st, func(ctx context.Context, tx state.Tx) error { return wish.Reset(ctx, tx, "ghost", now) })
		require.ErrorIs(t, err, state.ErrNotFound)
	})
}

func TestRotateTokenReplacesTheHashAndKeepsTheGeneration(t *testing.T) {
	tests := []struct {
		name string
		had  bool // a token hash before
	}{
		{"after a start", true},
		{"never started", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eachBackend(t, func(t *testing.T, st state.Store) {
				put(t, st, state.Spore{Wish: state.Wish{ID: "a", Desired: state.Running, Generation: 3}})
				old := state.HashToken("spt_old")
				if tt.had {
					require.NoError(t, update(st, func(ctx context.Context, tx state.Tx) error { return tx.SetTokenHash(ctx, "a", old) }))
				}
				require.NoError(t, update(st, func(ctx context.Context, tx state.Tx) error { return wish.RotateToken(ctx, tx, "a", now) }))
				h := statetest.Read(t, st, func(ctx context.Context, tx state.Tx) (state.TokenHash, error) { return tx.TokenHash(ctx, "a") })
				require.NotEqual(t, old, h)
				require.Len(t, string(h), 64, "a sha256 hash in hex")
				sp, evs := read(t, st, "a")
				require.Equal(t, uint64(3), sp.Generation, "the wish is unchanged")
				require.Equal(t, []state.Event{{Seq: 1, Kind: state.KindLifecycle, Action: "token-rotated", At: now,
					Text: "API token rotated: the old one no longer authenticates; the spore gets a new one on its next start"}}, evs)
			})
		})
	}
}

func TestRotateTokenOfAMissingSporeIsNotFound(t *testing.T) {
	eachBackend(t, func(t *testing.T, st state.Store) {
		err := update(st, func(ctx context.Context, tx state.Tx) error { return wish.RotateToken(ctx, tx, "ghost", now) })
		require.ErrorIs(t, err, state.ErrNotFound)
	})
}
