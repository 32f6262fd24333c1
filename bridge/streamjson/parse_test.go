package streamjson

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

func parseFile(t *testing.T, path string) [][]Event {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out [][]Event
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, Parse(append([]byte(nil), sc.Bytes()...)))
	}
	require.NoError(t, sc.Err())
	return out
}

func TestParseTurn(t *testing.T) {
	lines := parseFile(t, "testdata/turn.jsonl")
	require.Len(t, lines, 10)

	init := lines[0][0]
	require.Equal(t, KindInit, init.Kind)
	require.Equal(t, "11111111-2222-3333-4444-555555555555", init.SessionID)
	require.Equal(t, "claude-opus-5-5", init.Model)
	require.Equal(t, "/home/spore", init.CWD)
	require.Contains(t, init.Tools, "Write")

	require.Len(t, lines[1], 2)
	require.Equal(t, KindText, lines[1][0].Kind)
	require.Equal(t, "I will write it.", lines[1][0].Text)
	write := lines[1][1]
	require.Equal(t, KindToolUse, write.Kind)
	require.Equal(t, "Write", write.ToolUse.Name)
	require.Equal(t, "/home/spore/out.txt", write.ToolUse.FilePath)
	require.JSONEq(t, `{"file_path":"/home/spore/out.txt","content":"hello\n"}`, string(write.ToolUse.Input))

	res := lines[2][0]
	require.Equal(t, KindToolResult, res.Kind)
	require.Equal(t, "toolu_1", res.ToolResult.ToolUseID)
	require.Contains(t, res.ToolResult.Content, "File created")
	require.False(t, res.ToolResult.IsError)

	require.Equal(t, "ls -la", lines[3][0].ToolUse.Command)
	require.Equal(t, KindSystem, lines[4][0].Kind)
	require.Equal(t, "permission_denied", lines[4][0].Subtype)
	require.True(t, lines[5][0].ToolResult.IsError)
	require.Equal(t, "Claude requested permissions to use Bash", lines[5][0].ToolResult.Content)

	result := lines[7][0]
	require.Equal(t, KindResult, result.Kind)
	require.Equal(t, "success", result.Result.Subtype)
	require.Equal(t, "wrote it", result.Result.Text)
	require.EqualValues(t, 178, result.Result.DurationMS)
	require.EqualValues(t, 26, result.Result.APIDurationMS)
	require.Equal(t, 3, result.Result.NumTurns)
	require.InDelta(t, 0.0013, result.Result.CostUSD, 1e-9)
	require.EqualValues(t, 200, result.Result.Usage.InputTokens)
	require.EqualValues(t, 7, result.Result.Usage.CacheReadInputTokens)
	require.Equal(t, 1, result.Result.PermissionDenials)

	for _, i := range []int{8, 9} {
		require.Equal(t, KindUnknown, lines[i][0].Kind, "line %d", i+1)
	}
	require.Equal(t, `"not json at all"`, string(lines[9][0].Raw), "unknown lines are kept verbatim")
}

func TestParseErrorResult(t *testing.T) {
	evs := Parse([]byte(`{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["API Error: 500"],"session_id":"s"}`))
	require.Len(t, evs, 1)
	require.True(t, evs[0].Result.IsError)
	require.Equal(t, []string{"API Error: 500"}, evs[0].Result.Errors)
}

// FuzzParse: no input panics, every input gives at least one event, and
// every event carries the input verbatim.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Edit","input":{"file_path":"a"}}]}}`))
	f.Add([]byte(`{"type":"result","errors":[{"message":"x"}],"permission_denials":[{}]}`))
	f.Add([]byte(`{"type":"user","message":{"content":"hi"}}`))
	f.Add([]byte(`{"type":"user","message":{"content":[{"type":"tool_result","content":[{"type":"text","text":"a"}]}]}}`))
	f.Add([]byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, line []byte) {
		evs := Parse(line)
		if len(evs) == 0 {
			t.Fatal("no event")
		}
		for _, e := range evs {
			if string(e.Raw) != string(line) {
				t.Fatalf("event lost the line: %q", e.Raw)
			}
			if e.Kind == KindToolUse && e.ToolUse == nil || e.Kind == KindResult && e.Result == nil {
				t.Fatalf("event %s without its payload", e.Kind)
			}
		}
		_ = json.Valid(line)
	})
}
