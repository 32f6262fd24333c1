package server

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
)

// TestWriteJSONServesALineAsStored: <, > and & are not escaped, so a
// line of code under bridge.MaxLineBytes is served under it too (escaped,
// each of them would be six bytes).
func TestWriteJSONServesALineAsStored(t *testing.T) {
	line := `{"text":"` + strings.Repeat("a<b && c>d ", 1000) + `"}`
	rec := httptest.NewRecorder()
	writeJSON(rec, 200, bridge.Events{Events: []bridge.Event{{Seq: 1, Line: json.RawMessage(line)}}, LastSeq: 1})
	require.Contains(t, rec.Body.String(), line)
}
