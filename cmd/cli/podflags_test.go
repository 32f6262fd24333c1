package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
	"github.com/sporectl/sporectl/state/statetest"
)

// create's pod option flags parse into the spec's pod options; without
// any, the spec has none.
func TestCreatePodFlagsParse(t *testing.T) {
	o, err := parse(t, newCmdCreate, "w-1",
		"--runtime-class", "gvisor",
		"--node-selector", "pool=agents", "--node-selector", "kubernetes.io/arch=amd64",
		"--toleration", "sandbox=gvisor:NoSchedule", "--toleration", "gpu:NoExecute",
		"--toleration", "team=moss", "--toleration", "spot",
		"--env-from-secret", "team-keys", "--env-from-secret", "model.v2",
		"--label", "team=moss", "--label", "example.com/tier=",
		"--annotation", "example.com/note=a, b = c",
	)
	require.NoError(t, err)
	assert.Equal(t, &state.PodOptions{
		RuntimeClassName: "gvisor",
		NodeSelector:     map[string]string{"pool": "agents", "kubernetes.io/arch": "amd64"},
		Tolerations: []state.Toleration{
			{Key: "sandbox", Operator: "Equal", Value: "gvisor", Effect: "NoSchedule"},
			{Key: "gpu", Operator: "Exists", Effect: "NoExecute"},
			{Key: "team", Operator: "Equal", Value: "moss"},
			{Key: "spot", Operator: "Exists"},
		},
		EnvFromSecrets: []string{"team-keys", "model.v2"},
		Labels:         map[string]string{"team": "moss", "example.com/tier": ""},
		Annotations:    map[string]string{"example.com/note": "a, b = c"},
	}, o.Spec.Pod)
	require.NoError(t, o.Spec.Pod.Validate("spec.pod"))

	o, err = parse(t, newCmdCreate, "w-1", "--cpu", "1")
	require.NoError(t, err)
	assert.Nil(t, o.Spec.Pod, "no pod flag, no pod options")
}

// A bad pod option flag is a usage error (exit 2) naming the flag and the
// value, and the command does not run.
func TestCreatePodFlagsRefuse(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in the message, after the flag and value
	}{
		{[]string{"--runtime-class", "gVisor"}, `invalid value "gVisor" for --runtime-class: runtime class must be lowercase`},
		{[]string{"--runtime-class", ""}, `invalid value "" for --runtime-class: runtime class must not be empty`},
		{[]string{"--label", "team"}, `invalid value "team" for --label: want KEY=VALUE`},
		{[]string{"--label", "-team=x"}, `invalid value "-team=x" for --label: key name must be`},
		{[]string{"--label", "team=a b"}, `invalid value "team=a b" for --label: value must be empty, or`},
		{[]string{"--label", "sporectl.dev/spore=other"}, `invalid value "sporectl.dev/spore=other" for --label: sporectl.dev/spore is a key sporectl sets itself`},
		{[]string{"--label", "a=1", "--label", "a=2"}, `invalid value "a=2" for --label: key a is given twice`},
		{[]string{"--annotation", "app.kubernetes.io/managed-by=me"}, `for --annotation: app.kubernetes.io/managed-by is a key sporectl sets itself`},
		{[]string{"--annotation", "note=\x1b[2J"}, `for --annotation: value contains a control character`},
		{[]string{"--node-selector", "pool"}, `invalid value "pool" for --node-selector: want KEY=VALUE`},
		{[]string{"--node-selector", "Pool/x=a"}, `invalid value "Pool/x=a" for --node-selector: key prefix must be`},
		{[]string{"--toleration", "k=v:NoRun"}, `invalid value "k=v:NoRun" for --toleration: effect must be NoSchedule, PreferNoSchedule, NoExecute`},
		{[]string{"--toleration", "k:"}, `invalid value "k:" for --toleration: nothing after ':'`},
		{[]string{"--toleration", "=v:NoSchedule"}, `invalid value "=v:NoSchedule" for --toleration: want KEY=VALUE:EFFECT`},
		{[]string{"--toleration", "k=a b"}, `invalid value "k=a b" for --toleration: value must be empty, or`},
		{[]string{"--env-from-secret", "Keys"}, `invalid value "Keys" for --env-from-secret: secret name must be lowercase`},
		{[]string{"--env-from-secret", "spore-w-2"}, `invalid value "spore-w-2" for --env-from-secret: secret name names a spore's own Secret`},
		{[]string{"--env-from-secret", "k", "--env-from-secret", "k"}, `invalid value "k" for --env-from-secret: given twice`},
		{manyFlags("--toleration", "k%d", state.MaxTolerations+1), `too many --toleration flags (33): at most 32 are allowed`},
		{manyFlags("--label", "k%d=v", state.MaxPodMapEntries+1), `too many --label flags (65): at most 64 entries are allowed`},
	} {
		t.Run(tc.want, func(t *testing.T) {
			o, err := parse(t, newCmdCreate, append([]string{"w-1"}, tc.args...)...)
			require.Error(t, err)
			assert.Equal(t, ExitUsage, exitCode(err), "%v", err)
			assert.Contains(t, err.Error(), tc.want)
			assert.Nil(t, o, "a refused value never runs")
		})
	}
}

func manyFlags(flag, format string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, flag, fmt.Sprintf(format, i))
	}
	return out
}

// create records the spore's own pod options, never the store's default
// (the runtime merges that in at each start); on a local store it says on
// stderr that they are ignored there, on a kube store it says nothing.
func TestCreateRecordsPodOptions(t *testing.T) {
	ctx := t.Context()
	root := filepath.Join(t.TempDir(), "store")
	def := &state.PodOptions{RuntimeClassName: "kata", Labels: map[string]string{"cost": "shared"}}
	st := statetest.DirAt(t, root, state.Settings{Runtime: "kube", Namespace: "spores", DefaultSpec: state.Spec{CPU: "1", Memory: "1Gi", Storage: "1Gi", Pod: def}})
	require.NoError(t, st.Close())

	r := run(t, root, "create", "w-1", "--runtime-class", "gvisor", "--label", "team=moss")
	require.Equal(t, 0, r.code, r.err)
	assert.NotContains(t, r.err, "warning", "a kube store uses them")
	r = run(t, root, "create", "w-2")
	require.Equal(t, 0, r.code, r.err)

	st, err := dirstore.Open(ctx, root, dirstore.Options{})
	require.NoError(t, err)
	defer st.Close()
	assert.Equal(t, &state.PodOptions{RuntimeClassName: "gvisor", Labels: map[string]string{"team": "moss"}}, statetest.Spore(t, st, "w-1").Spec.Pod)
	assert.Nil(t, statetest.Spore(t, st, "w-2").Spec.Pod, "the store's default is not copied into the record")
	assert.Equal(t, "1", statetest.Spore(t, st, "w-2").Spec.CPU, "the rest of the spec is")

	local := filepath.Join(t.TempDir(), "local")
	mustRun(t, local, "init", "--agent", "echo", "--no-operator")
	r = run(t, local, "create", "w-3", "--env-from-secret", "keys")
	require.Equal(t, ExitUsage, r.code, r.err)
	assert.Contains(t, r.err, `invalid --env-from-secret "keys": is not a Secret the operator allows pods to name; add it to the store's setting pod_secrets (sporectl init --pod-secret NAME, repeatable)`)
	assert.Equal(t, ExitNotFound, run(t, local, "events", "w-3").code, "nothing created")
	mustRun(t, local, "init", "--pod-secret", "keys")
	r = run(t, local, "create", "w-3", "--label", "team=moss", "--env-from-secret", "keys")
	require.Equal(t, 0, r.code, r.err)
	assert.Contains(t, r.err, "warning: the local runtime ignores pod options (--env-from-secret, --label): spore w-3 keeps them, and pods get them once the store runs on Kubernetes")
	ls, err := dirstore.Open(context.Background(), local, dirstore.Options{})
	require.NoError(t, err)
	defer ls.Close()
	assert.Equal(t, []string{"keys"}, statetest.Spore(t, ls, "w-3").Spec.Pod.EnvFromSecrets)
}

// init's pod option flags set the store's default pod options: on an
// existing store each flag given replaces its field whole and leaves the
// others; an empty value removes the field; the same values again change
// nothing; a bad one is exit 2 with the settings untouched.
func TestInitPodDefaults(t *testing.T) {
	root := filepath.Join(t.TempDir(), "store")
	settings := func() *state.PodOptions {
		t.Helper()
		st, err := dirstore.Open(context.Background(), root, dirstore.Options{})
		require.NoError(t, err)
		defer st.Close()
		s := statetest.Read(t, st, func(ctx context.Context, tx state.Tx) (state.Settings, error) { return tx.Settings(ctx) })
		return s.DefaultSpec.Pod
	}
	r := run(t, root, "init", "--runtime", "kube", "--no-operator", "--runtime-class", "gvisor", "--label", "team=platform", "--toleration", "agents:NoSchedule")
	require.Equal(t, 0, r.code, r.err)
	assert.NotContains(t, r.err, "warning: the local runtime")
	want := &state.PodOptions{RuntimeClassName: "gvisor", Labels: map[string]string{"team": "platform"},
		Tolerations: []state.Toleration{{Key: "agents", Operator: "Exists", Effect: "NoSchedule"}}}
	assert.Equal(t, want, settings())

	r = run(t, root, "init", "--label", "cost=shared", "--env-from-secret", "colony-keys")
	require.Equal(t, ExitUsage, r.code, "a Secret the operator did not list: %s", r.err)
	assert.Contains(t, r.err, `invalid default_spec.pod.env_from_secrets[0] "colony-keys": is not a Secret the operator allows pods to name`)
	assert.Equal(t, want, settings())
	r = run(t, root, "init", "--label", "cost=shared", "--env-from-secret", "colony-keys", "--pod-secret", "colony-keys")
	require.Equal(t, 0, r.code, r.err)
	assert.Contains(t, r.out, "configured")
	want.Labels, want.EnvFromSecrets = map[string]string{"cost": "shared"}, []string{"colony-keys"}
	assert.Equal(t, want, settings(), "a flag given replaces its field, the others stay")

	r = run(t, root, "init", "--label", "cost=shared")
	require.Equal(t, 0, r.code, r.err)
	assert.Contains(t, r.out, "unchanged")

	r = run(t, root, "init", "--annotation", "sporectl.dev/owner=me")
	assert.Equal(t, ExitUsage, r.code)
	assert.Contains(t, r.err, `invalid value "sporectl.dev/owner=me" for --annotation`)
	assert.Equal(t, want, settings())

	r = run(t, root, "init", "--runtime-class", "", "--label", "")
	require.Equal(t, 0, r.code, r.err)
	assert.Equal(t, &state.PodOptions{EnvFromSecrets: []string{"colony-keys"},
		Tolerations: []state.Toleration{{Key: "agents", Operator: "Exists", Effect: "NoSchedule"}}}, settings(), "an empty value removes its field")
	r = run(t, root, "init", "--env-from-secret", "", "--toleration", "")
	require.Equal(t, 0, r.code, r.err)
	assert.Nil(t, settings(), "nothing left: no default pod options")

	local := filepath.Join(t.TempDir(), "local")
	r = run(t, local, "init", "--agent", "echo", "--no-operator", "--node-selector", "pool=agents")
	require.Equal(t, 0, r.code, r.err)
	assert.Contains(t, r.err, "warning: the local runtime ignores pod options (--node-selector): the store keeps them as its spores' default")
}
