package server

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func openTestQueue(t *testing.T, path string) *queue {
	t.Helper()
	q, err := openQueue(context.Background(), path, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { q.close() })
	return q
}

func TestQueueReplayAndTornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), queueName)
	q := openTestQueue(t, path)
	for _, id := range []string{"a", "b", "c"} {
		_, dup, err := q.add(Prompt{ID: id, From: "u", Text: "t " + id})
		require.NoError(t, err)
		require.False(t, dup)
	}
	require.NoError(t, q.start("a"))
	require.NoError(t, q.finish("a"))
	require.NoError(t, q.start("b"))
	require.NoError(t, q.close())

	// A crash in the middle of the next op leaves half a line.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"op":"add","prompt":{"id":"d"`)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	q2 := openTestQueue(t, path)
	head, ok := q2.head()
	require.True(t, ok)
	require.Equal(t, "b", head.ID)
	require.Equal(t, 1, head.Attempts, "b was in flight")
	require.Equal(t, 2, q2.len())
	pos, dup, err := q2.add(Prompt{ID: "a", From: "u", Text: "again"})
	require.NoError(t, err)
	require.True(t, dup)
	require.Equal(t, -1, pos)
	pos, dup, err = q2.add(Prompt{ID: "c", From: "u", Text: "again"})
	require.NoError(t, err)
	require.True(t, dup)
	require.Equal(t, 1, pos)
	pos, dup, err = q2.add(Prompt{ID: "d", From: "u", Text: "t d"})
	require.NoError(t, err)
	require.False(t, dup, "the torn op never counted")
	require.Equal(t, 2, pos)
}

func TestQueueCorruptMiddleIsAnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), queueName)
	require.NoError(t, os.WriteFile(path, []byte("{\"op\":\"add\",\"prompt\":{\"id\":\"a\"}}\nrubbish\n{\"op\":\"done\",\"id\":\"a\"}\n"), 0o600))
	_, err := openQueue(context.Background(), path, slog.New(slog.DiscardHandler))
	require.ErrorContains(t, err, "line 2")
}

func TestQueueCompactionKeepsIDsAndOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), queueName)
	q := openTestQueue(t, path)
	for i := range compactAfter + 5 {
		id := fmt.Sprintf("p%d", i)
		_, _, err := q.add(Prompt{ID: id, From: "u", Text: "x"})
		require.NoError(t, err)
		if i < compactAfter {
			require.NoError(t, q.start(id))
			require.NoError(t, q.finish(id))
		}
	}
	require.NoError(t, q.start(fmt.Sprintf("p%d", compactAfter)))
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.Less(t, st.Size(), int64(30*compactAfter), "the journal was rewritten")
	require.NoError(t, q.close())

	q2 := openTestQueue(t, path)
	require.Equal(t, 5, q2.len())
	head, _ := q2.head()
	require.Equal(t, fmt.Sprintf("p%d", compactAfter), head.ID)
	require.Equal(t, 1, head.Attempts)
	_, dup, err := q2.add(Prompt{ID: "p7", From: "u", Text: "x"})
	require.NoError(t, err)
	require.True(t, dup, "done ids survive compaction")
}

func TestLoadToken(t *testing.T) {
	home := t.TempDir()
	_, err := LoadToken(home, "")
	require.ErrorIs(t, err, ErrNoToken)

	require.NoError(t, os.MkdirAll(stateDir(home), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(stateDir(home), tokenName), []byte("from-file-token\n"), 0o600))
	tok, err := LoadToken(home, "")
	require.NoError(t, err)
	require.Equal(t, "from-file-token", tok)
	tok, err = LoadToken(home, "from-env-token")
	require.NoError(t, err)
	require.Equal(t, "from-env-token", tok, "the environment wins")

	require.NoError(t, os.WriteFile(filepath.Join(stateDir(home), tokenName), []byte("  \n"), 0o600))
	_, err = LoadToken(home, "")
	require.ErrorIs(t, err, ErrNoToken)
}
