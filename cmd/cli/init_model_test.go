package cli

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
)

func settingsOf(t *testing.T, store string) state.Settings {
	t.Helper()
	st, err := dirstore.Open(context.Background(), store, dirstore.Options{})
	require.NoError(t, err)
	defer st.Close()
	var s state.Settings
	require.NoError(t, st.View(context.Background(), func(tx state.Tx) (err error) { s, err = tx.Settings(context.Background()); return }))
	return s
}

// TestInitModelGateway: a new store has the gateway on (kept as the
// default, ""), and init says that serve must run for local spores to
// reach the model; --model-gateway and --model-calls-per-minute change an
// existing store only when given, and init says which mode it left.
func TestInitModelGateway(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	r := runAs(t, store, "dora", "init", "--no-operator")
	require.Equal(t, 0, r.code, r.err)
	s := settingsOf(t, store)
	require.True(t, s.Gateway())
	require.Equal(t, "", s.ModelGateway, "the default is kept as the default")
	require.Equal(t, state.DefaultModelCallsPerMinute, s.ModelCallRate())
	require.Contains(t, r.err, "Model gateway on: spores reach the model through serve at http://127.0.0.1:7070/model")
	require.Contains(t, r.err, "Run 'sporectl serve' for spores to reach the model")

	steps := []struct {
		args     []string
		action   string
		gateway  string
		rate     int
		notice   string
		noNotice bool
	}{
		{args: []string{"--model-gateway", "off"}, action: "configured", gateway: state.GatewayOff, notice: "Model gateway off (direct mode): every spore gets the model's key from ANTHROPIC_*"},
		{args: nil, action: "unchanged", gateway: state.GatewayOff, noNotice: true},
		{args: []string{"--agent", "echo"}, action: "configured", gateway: state.GatewayOff, noNotice: true},
		{args: []string{"--model-calls-per-minute", "30"}, action: "configured", gateway: state.GatewayOff, rate: 30, noNotice: true},
		{args: []string{"--model-gateway", "on", "--api-url", "http://10.0.0.5:7070/"}, action: "configured", gateway: state.GatewayOn, rate: 30,
			notice: "through serve at http://10.0.0.5:7070/model with their own token; the key stays with serve ($ANTHROPIC_API_KEY or --model-key-file). Run 'sporectl serve' for spores to reach the model (30 calls a minute per spore)"},
		{args: []string{"--model-calls-per-minute", "0"}, action: "configured", gateway: state.GatewayOn, noNotice: true},
		{args: []string{"--runtime", "kube"}, action: "configured", gateway: state.GatewayOn,
			notice: "serve at http://10.0.0.5:7070/model with their own token; the sporectl-model Secret goes to serve's Deployment alone"},
	}
	for _, st := range steps {
		r := runAs(t, store, "dora", append([]string{"init", "--no-operator"}, st.args...)...)
		require.Equal(t, 0, r.code, "%v: %s", st.args, r.err)
		require.Equal(t, "store "+store+" "+st.action+"\n", r.out, "%v", st.args)
		s := settingsOf(t, store)
		require.Equal(t, st.gateway, s.ModelGateway, "%v", st.args)
		require.Equal(t, st.rate, s.ModelCallsPerMinute, "%v", st.args)
		if st.noNotice {
			require.NotContains(t, r.err, "Model gateway", "%v: said only when the store is made or the mode's flags are given", st.args)
		} else {
			require.Contains(t, r.err, st.notice, "%v", st.args)
		}
		if st.gateway == state.GatewayOn {
			require.NotContains(t, r.err, "direct")
		}
	}
	require.NotContains(t, runAs(t, store, "dora", "init", "--no-operator", "--runtime", "kube").err, "Run 'sporectl serve'",
		"on kube serve runs as a Deployment")

	kubeStore := filepath.Join(t.TempDir(), "kube")
	r = runAs(t, kubeStore, "dora", "init", "--no-operator", "--runtime", "kube")
	require.Equal(t, 0, r.code, r.err)
	require.Contains(t, r.err, "Model gateway on: spores reach the model through serve at http://sporectl-api.sporectl.svc/model")
}

// TestInitModelFlagsRefused: a bad value is a usage error (exit 2) that
// names its flag, and changes nothing.
func TestInitModelFlagsRefused(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	require.Equal(t, 0, runAs(t, store, "dora", "init", "--no-operator", "--model-gateway", "off").code)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--model-gateway", "maybe"}, `invalid value "maybe" for --model-gateway: use on or off`},
		{[]string{"--model-gateway", ""}, "--model-gateway"},
		{[]string{"--model-gateway", "ON"}, "--model-gateway"},
		{[]string{"--model-calls-per-minute", "-1"}, "invalid value -1 for --model-calls-per-minute: use 0 (the default, 120) to 100000"},
		{[]string{"--model-calls-per-minute", "100001"}, "--model-calls-per-minute"},
		{[]string{"--model-calls-per-minute", "many"}, "--model-calls-per-minute"},
	} {
		r := runAs(t, store, "dora", append([]string{"init", "--no-operator", "--model-gateway", "on"}, tc.args...)...)
		require.Equal(t, ExitUsage, r.code, "%v: %s", tc.args, r.err)
		require.Contains(t, r.err, tc.want, "%v", tc.args)
		require.Equal(t, state.GatewayOff, settingsOf(t, store).ModelGateway, "%v changed nothing", tc.args)
	}
}
