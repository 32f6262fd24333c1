package views

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// BenchmarkTranscriptHistory: a projection (views.Full) of a fleet of one
// spore whose log holds 100 or 300,000 events, with nothing new (noop)
// and with one new line (oneline: appended to the store between the
// timed projections, outside the timer). Issue 35's goal: a spore with
// 300,000 events within 1.5× of one with 100, in time and in bytes
// allocated (docs/performance.md "Transcripts of a long history").
func BenchmarkTranscriptHistory(b *testing.B) {
	for _, n := range []int{100, 300_000} {
		st := statetest.Dir(b, state.Settings{Runtime: "local"})
		res := chatty(b, st, n)
		d := &Dir{Path: filepath.Join(b.TempDir(), "views")}
		if _, err := d.Project(b.Context(), st, res, Full); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("noop/events=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				written, err := d.Project(b.Context(), st, res, Full)
				if err != nil || len(written) != 0 {
					b.Fatal(written, err)
				}
			}
		})
		b.Run(fmt.Sprintf("oneline/events=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				res.Spores[0].LastSeq = appendTo(b, st, "talky", lineEvent(n+i))
				b.StartTimer()
				written, err := d.Project(b.Context(), st, res, Full)
				if err != nil || len(written) != 3 {
					b.Fatal(written, err)
				}
			}
		})
	}
}
