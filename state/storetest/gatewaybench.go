package storetest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sporectl/sporectl/state"
)

// FillModelRecord counts calls into spore id's gateway record until it is
// as full as it gets: state.MaxActivity hours, the last gwNow's, and
// state.MaxCountedCalls calls. A benchmark of counting then pays what a
// busy spore's count pays (the record read, changed and written whole).
func FillModelRecord(ctx context.Context, s state.Store, id string) error {
	first := gwNow.Truncate(time.Hour).Add(-time.Duration(state.MaxActivity-1) * time.Hour)
	for i := range state.MaxActivity {
		if _, err := count(ctx, s, id, fmt.Sprintf("msg_fill_%03d", i), callEnd, first.Add(time.Duration(i)*time.Hour)); err != nil {
			return err
		}
	}
	return nil
}

// benchCalls names the benchmark's calls apart across the runs of one
// process (the testing package calls a benchmark several times).
var benchCalls atomic.Int64

// BenchCountModelCall counts one new model call of spore id per
// iteration, as the gateway does: its start, then its end, each in a
// transaction of its own (two transactions per op).
func BenchCountModelCall(b *testing.B, s state.Store, id string) {
	ctx := b.Context()
	for b.Loop() {
		call := fmt.Sprintf("msg_bench_%d", benchCalls.Add(1))
		for _, u := range []state.Usage{callStart, callEnd} {
			if _, err := count(ctx, s, id, call, u, gwNow); err != nil {
				b.Fatal(err)
			}
		}
	}
}
