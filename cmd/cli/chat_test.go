package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/internal/testutil"
)

// TestChatFollowEndsQuietly: Ctrl-C (the command's context cancelled, as
// Main's signal handler does) ends chat --follow with exit 0 and nothing
// on stderr, after what it printed; without --follow nothing changes.
func TestChatFollowEndsQuietly(t *testing.T) {
	c := newFakeColony(t)
	c.ok("create", "a", "--wake")
	c.ok("prompt", "a", "hello", "--timeout", "5s")

	for _, follow := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		var out, errb testutil.Buffer
		w := *c
		w.getenv = func(string) string { return "" }
		f := w.factory(strings.NewReader(""), &out, &errb)
		args := []string{"chat", "a"}
		if follow {
			args = append(args, "--follow")
		}
		done := make(chan int, 1)
		go func() { done <- RunWith(ctx, f, args) }()
		require.Eventually(t, func() bool { return strings.Contains(out.String(), "echo: hello") }, 10*time.Second, 10*time.Millisecond, "chat printed the conversation")
		if follow {
			select {
			case code := <-done:
				t.Fatalf("chat --follow ended by itself with exit %d: %s", code, errb.String())
			case <-time.After(100 * time.Millisecond):
			}
		}
		cancel()
		select {
		case code := <-done:
			require.Equal(t, ExitOK, code, "follow=%v: %s", follow, errb.String())
		case <-time.After(10 * time.Second):
			t.Fatalf("follow=%v: chat did not end on Ctrl-C", follow)
		}
		require.Empty(t, errb.String(), "follow=%v", follow)
	}
}
