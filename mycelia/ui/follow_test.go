package ui

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// TestFollowTakesInWhatIsWatched: while a live tail watches a spore,
// what its bridge writes reaches the tail with no pass run by anyone
// else; every tail of the spore shares one loop, which stops when the
// last one goes; an unwatched spore's bridge is not read.
func TestFollowTakesInWhatIsWatched(t *testing.T) {
	f := liveFixture(t)
	f.h.FollowEvery = 20 * time.Millisecond
	f.add(stateSpore("w"), true, lifecycle(0, "created", ""))
	f.add(stateSpore("u"), true, lifecycle(0, "created", ""))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	sc, close1 := f.openStream(ctx, t, "/ui/spores/w/events?after=1")
	sc2, close2 := f.openStream(ctx, t, "/ui/spores/w/events?after=1")
	require.True(t, sc.Scan())
	require.True(t, sc2.Scan())
	require.Equal(t, 1, f.h.following(), "one loop for both tails")

	f.rt.BridgeOf("w").Write(`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"hello from the bridge"}]}}`)
	f.rt.BridgeOf("u").Write(`{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"nobody watches"}]}}`)
	var texts []string
	for len(texts) == 0 || texts[len(texts)-1] != "hello from the bridge" {
		for _, l := range nextLines(t, sc) {
			texts = append(texts, l.Text)
		}
	}

	close1()
	close2()
	require.Eventually(t, func() bool { return f.h.following() == 0 }, 10*time.Second, 5*time.Millisecond, "the loop stops with the last tail")
	var head state.SporeHead
	require.NoError(t, f.st.Store.View(ctx, func(tx state.Tx) (err error) { head, err = tx.Head(ctx, "u"); return }))
	require.Equal(t, uint64(1), head.LastSeq, "the unwatched spore's lines were not taken in")
}

// TestFollowOff: FollowEvery < 0 follows nothing.
func TestFollowOff(t *testing.T) {
	f := liveFixture(t)
	f.h.FollowEvery = -1
	f.add(stateSpore("w"), true, lifecycle(0, "created", ""))
	sc, closer := f.openStream(context.Background(), t, "/ui/spores/w/events?after=1")
	defer closer()
	require.True(t, sc.Scan(), "the stream's first line")
	require.Zero(t, f.h.following(), "the handler got past follow() before its first line")
}
