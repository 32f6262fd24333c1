package dirstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/storetest"
)

// recv receives from ch, failing the test when nothing comes (a bound on
// a hang, not a timing assertion).
func recv(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case id, ok := <-ch:
		require.True(t, ok, "the watch ended")
		return id
	case <-time.After(30 * time.Second):
		t.Fatal("no change seen")
		return ""
	}
}

func appendN(t *testing.T, s *Store, id string, n int) {
	t.Helper()
	ctx := context.Background()
	evs := make([]state.Event, n)
	for i := range evs {
		evs[i] = state.Event{Kind: state.KindPrompt, From: "user:t", Text: "p"}
	}
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		_, err := tx.Append(ctx, id, evs)
		return err
	}))
}

// testWatch: commits made through another handle of the store (as another
// process would) are seen, each naming the spore whose log grew, across
// compactions (a tiny CompactBytes folds nearly every commit into a new
// snapshot and commit log); a commit that changes no log names nobody; a
// deleted spore is named; ending ctx closes the channel.
func testWatch(t *testing.T) {
	s := newTestStore(t, Options{CompactBytes: 1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		for _, id := range []string{"a", "b"} {
			if err := tx.CreateSpore(ctx, storetest.Spore(id)); err != nil {
				return err
			}
		}
		return nil
	}))
	other, err := Open(ctx, s.root, Options{CompactBytes: 1})
	require.NoError(t, err)

	ch, err := s.Watch(ctx)
	require.NoError(t, err)
	for i := range 5 {
		id := []string{"a", "b"}[i%2]
		appendN(t, other, id, 1+i)
		require.Equal(t, id, recv(t, ch), "commit %d", i)
	}
	// A commit that grows no log (settings), then one that does.
	require.NoError(t, other.Update(ctx, func(tx state.Tx) error {
		st, err := tx.Settings(ctx)
		if err != nil {
			return err
		}
		st.Runtime = "local"
		return tx.PutSettings(ctx, st)
	}))
	appendN(t, other, "b", 1)
	require.Equal(t, "b", recv(t, ch))
	require.NoError(t, other.Update(ctx, func(tx state.Tx) error { return tx.DeleteSpore(ctx, "a") }))
	require.Equal(t, "a", recv(t, ch))

	cancel()
	for range ch {
	}
}

func TestWatchInotify(t *testing.T) { testWatch(t) }

// TestWatchPolls: without inotify the watch polls, with the same result.
func TestWatchPolls(t *testing.T) {
	orig := inotifyInit
	inotifyInit = func(int) (int, error) { return -1, errors.New("no inotify here") }
	defer func() { inotifyInit = orig }()
	testWatch(t)
}

func TestWatchRelevant(t *testing.T) {
	ev := func(name string, mask uint32) []byte {
		n := (len(name) + 1 + 15) / 16 * 16
		b := make([]byte, unix.SizeofInotifyEvent+n)
		b[4], b[5], b[6], b[7] = byte(mask), byte(mask>>8), byte(mask>>16), byte(mask>>24)
		b[12] = byte(n)
		copy(b[unix.SizeofInotifyEvent:], name)
		return b
	}
	require.False(t, relevant(ev("lock", unix.IN_MODIFY)))
	require.False(t, relevant(append(ev("lock", unix.IN_MODIFY), ev("state.json.tmp", unix.IN_CREATE)...)))
	require.True(t, relevant(append(ev("lock", unix.IN_MODIFY), ev("txlog.3", unix.IN_MODIFY)...)))
	require.True(t, relevant(ev("state.json", unix.IN_MOVED_TO)))
	require.True(t, relevant(ev("", unix.IN_Q_OVERFLOW)))
}
