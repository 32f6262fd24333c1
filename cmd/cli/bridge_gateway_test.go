package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge/sporeenv"
)

// TestBridgeBehindTheGatewayWithoutATokenDoesNotStart: a bridge told to
// reach the model through the gateway but given no API token exits at
// start, as a usage error whose last line says why (the runtimes show it),
// rather than run an agent that fails every turn.
func TestBridgeBehindTheGatewayWithoutATokenDoesNotStart(t *testing.T) {
	home := t.TempDir()
	vars := map[string]string{sporeenv.ModelURL: "http://127.0.0.1:7070/model", sporeenv.SporeID: "w1", sporeenv.BridgeToken: "sbt_x"}
	var out, errb bytes.Buffer
	f := NewFactory(IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb})
	f.Getenv = func(k string) string { return vars[k] }
	code := RunWith(context.Background(), f, []string{"bridge", "--home", home, "--addr", "127.0.0.1:0", "--claude-bin", "/bin/true"})
	require.Equal(t, ExitUsage, code, errb.String())
	require.Contains(t, errb.String(), "error: no API token for the model gateway: SPORECTL_API_TOKEN is not set and "+home)
}
