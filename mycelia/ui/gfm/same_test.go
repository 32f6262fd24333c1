package gfm

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/yuin/goldmark"
	gmext "github.com/yuin/goldmark/extension"
)

// TestSameAsGoldmarksExtension: on the tables and strikethrough agents
// write, the page renders what it rendered with goldmark's extension
// package (linked by this test only, never by the binary).
func TestSameAsGoldmarksExtension(t *testing.T) {
	theirs := goldmark.New(goldmark.WithExtensions(
		gmext.NewTable(gmext.WithTableCellAlignMethod(gmext.TableCellAlignAttribute)),
		gmext.Strikethrough,
	))
	ours := goldmark.New(goldmark.WithExtensions(Extension))
	for _, in := range []string{
		"| File | Lines | Status |\n|------|------:|:------:|\n| `main.go` | 120 | ✅ |\n| `util.go` | 45 | ~~removed~~ |",
		"Summary:\n\n| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\nDone.",
		"| Test | Result |\n| --- | --- |\n| **TestX** | pass |\n| *TestY* | [log](https://example.com/y) |",
		"a | b\n--- | ---\nc | d",
		"| one column |\n|:-|\n| x |",
		"| a | b |\n|---|---|\n| only one |\n| 1 | 2 | 3 |",
		"| a \\| b | c |\n|---|---|\n| d | e |",
		"This is ~~wrong~~ right, and ~~**bold gone**~~.",
		"- [x] ~~done~~\n- [ ] todo",
		"> | q |\n> |---|\n> | r |",
		"| <script>x</script> | & |\n|---|---|",
		"| h |\n|---|\n\nafter",
	} {
		var a, b bytes.Buffer
		require.NoError(t, theirs.Convert([]byte(in), &a))
		require.NoError(t, ours.Convert([]byte(in), &b))
		require.Equal(t, a.String(), b.String(), "%q", in)
	}
}
