package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/transcript")

// goldenDir holds the inputs (*.jsonl, one state.Event a line) and the
// outputs (*.txt for WriteText, *.md for Markdown).
var goldenDir = filepath.Join("..", "..", "testdata", "transcript")

func readEvents(t *testing.T, name string) []state.Event {
	t.Helper()
	f, err := os.Open(filepath.Join(goldenDir, name+".jsonl"))
	require.NoError(t, err)
	defer f.Close()
	var evs []state.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev state.Event
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev), "%s.jsonl line %d", name, len(evs)+1)
		evs = append(evs, ev)
	}
	require.NoError(t, sc.Err())
	return evs
}

func golden(t *testing.T, file string, got []byte) {
	t.Helper()
	p := filepath.Join(goldenDir, file)
	if *update {
		require.NoError(t, os.WriteFile(p, got, 0o644))
		return
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "missing golden file; run go test ./reconcile/transcript -update")
	require.Equal(t, string(want), string(got), "output differs from %s (rerun with -update if the change is intended)", p)
}

func TestGolden(t *testing.T) {
	for _, name := range []string{"conversation", "hostile"} {
		t.Run(name, func(t *testing.T) {
			evs := readEvents(t, name)

			var text bytes.Buffer
			require.NoError(t, WriteText(&text, evs, TextOptions{}))
			golden(t, name+".txt", text.Bytes())
			requireNoControls(t, text.Bytes())

			var stamped bytes.Buffer
			require.NoError(t, WriteText(&stamped, evs, TextOptions{Timestamps: true}))
			golden(t, name+".timestamps.txt", stamped.Bytes())

			var md bytes.Buffer
			require.NoError(t, Markdown(&md, "worker-7", evs))
			golden(t, name+".md", md.Bytes())
			requireNoControls(t, md.Bytes())

			// Same events, same bytes.
			var again bytes.Buffer
			require.NoError(t, Markdown(&again, "worker-7", evs))
			require.Equal(t, md.String(), again.String())
		})
	}
}

// TestMarkdownPaged: writing a log a page at a time gives the bytes of
// writing it at once.
func TestMarkdownPaged(t *testing.T) {
	evs := readEvents(t, "conversation")
	var whole, paged bytes.Buffer
	require.NoError(t, Markdown(&whole, "worker-7", evs))
	m := NewMarkdown(&paged, "worker-7")
	for i := 0; i < len(evs); i += 4 {
		require.NoError(t, m.Events(evs[i:min(i+4, len(evs))]))
	}
	require.NoError(t, m.Close())
	require.Equal(t, whole.String(), paged.String())
}

func TestMarkdownEmpty(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, Markdown(&b, "worker-7", nil))
	require.Equal(t, "# Transcript of worker-7\n\n_No events yet._\n", b.String())
}

// TestMarkdownContinued: a transcript cut after any event, its closing
// set aside, and carried on by another writer from the state the first
// left, is the transcript written at once. The state is all that one
// event's rendering takes from those before it.
func TestMarkdownContinued(t *testing.T) {
	for _, name := range []string{"conversation", "hostile"} {
		evs := readEvents(t, name)
		var whole bytes.Buffer
		require.NoError(t, Markdown(&whole, "worker-7", evs))
		for cut := range len(evs) + 1 {
			var b bytes.Buffer
			m := NewMarkdown(&b, "worker-7")
			require.NoError(t, m.Events(evs[:cut]))
			require.NoError(t, m.Flush())
			s := m.State()
			require.Equal(t, cut > 0, s.Started)
			var closing bytes.Buffer
			require.NoError(t, ContinueMarkdown(&closing, s).Close())
			require.Equal(t, s.Closing(), closing.String(), "%s: Close writes the closing", name)
			rest := ContinueMarkdown(&b, s)
			require.NoError(t, rest.Events(evs[cut:]))
			require.NoError(t, rest.Close())
			require.Equal(t, whole.String(), b.String(), "%s cut after %d events", name, cut)
		}
	}
}
