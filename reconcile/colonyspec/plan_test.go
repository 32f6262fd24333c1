package colonyspec

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
)

var spec = state.Spec{Image: "img:1", CPU: "1", Memory: "2Gi", Storage: "5Gi"}

// stored is the store the plans are made against.
var stored = []state.Spore{
	{Wish: state.Wish{ID: "lab-myco", Colony: "lab", Rank: state.RankColony, Desired: state.Running, Spec: spec}},
	{Wish: state.Wish{ID: "ops-1", Colony: "ops", Rank: state.RankSpore, Desired: state.Paused, Spec: spec}},
	{Wish: state.Wish{ID: "red-1", Colony: "lab", Rank: state.RankSpore, Swarm: "red", Role: "dev", Desired: state.Paused, Spec: spec}},
	{Wish: state.Wish{ID: "red-lead", Colony: "lab", Rank: state.RankSwarm, Swarm: "red", Desired: state.Paused, Spec: spec, Loop: state.Duration(30 * time.Minute)}},
	{Wish: state.Wish{ID: "the-arch", Colony: "hq", Rank: state.RankArch, Desired: state.Running, Spec: spec}},
}

func doc(t *testing.T, spores string) []Document {
	t.Helper()
	docs, err := Read("lab.yaml", []byte("apiVersion: sporectl/v1\nkind: Colony\nmetadata: {name: lab}\nspec:\n  spores:\n"+spores))
	require.NoError(t, err)
	return docs
}

func TestMakePlan(t *testing.T) {
	tests := []struct {
		name   string
		spores string
		prune  bool
		want   []Change
	}{
		{"the stored colony, as exported", "", false, nil}, // filled below from Export
		{"fields left out keep what is stored", "  - {id: red-1}\n  - {id: lab-myco}\n", false, []Change{
			{Action: Unchanged, ID: "red-1", Colony: "lab"},
			{Action: Unchanged, ID: "lab-myco", Colony: "lab"},
		}},
		{"a change of each kind", "  - {id: red-1, swarm: blue, role: qa, desired: Running, resources: {cpu: '2'}}\n  - {id: red-lead, loop: '0'}\n", false, []Change{
			{Action: Configured, ID: "red-1", Colony: "lab",
				Diffs: []Diff{{"swarm", "red", "blue"}, {"role", "dev", "qa"}, {"resources.cpu", "1", "2"}, {"desired", "Paused", "Running"}},
				Spec:  &wish.Spec{Rank: state.RankSpore, Swarm: "blue", Role: "qa", Spec: state.Spec{Image: "img:1", CPU: "2", Memory: "2Gi", Storage: "5Gi"}}, Desired: state.Running},
			{Action: Configured, ID: "red-lead", Colony: "lab", Diffs: []Diff{{"loop", "30m0s", "0"}}, Loop: ptr(time.Duration(0))},
		}},
		{"out of a swarm", "  - {id: red-1, swarm: '', role: ''}\n", false, []Change{
			{Action: Configured, ID: "red-1", Colony: "lab", Diffs: []Diff{{"swarm", "red", ""}, {"role", "dev", ""}},
				Spec: &wish.Spec{Rank: state.RankSpore, Spec: spec}},
		}},
		{"a new spore", "  - {id: new-1, rank: swarm, swarm: blue, desired: Running, loop: 1h, image: img:2}\n", false, []Change{
			{Action: Created, ID: "new-1", Colony: "lab",
				Diffs: []Diff{{"rank", "", "swarm"}, {"swarm", "", "blue"}, {"image", "", "img:2"}, {"desired", "", "Running"}, {"loop", "", "1h0m0s"}},
				New:   &wish.New{ID: "new-1", Colony: "lab", Rank: state.RankSwarm, Swarm: "blue", Spec: state.Spec{Image: "img:2"}}, Desired: state.Running, Loop: ptr(time.Hour)},
		}},
		{"a new spore asleep, as create makes it", "  - {id: new-1}\n", false, []Change{
			{Action: Created, ID: "new-1", Colony: "lab", Diffs: []Diff{{"rank", "", "spore"}, {"desired", "", "Paused"}},
				New: &wish.New{ID: "new-1", Colony: "lab", Rank: state.RankSpore}},
		}},
		{"prune: the colony's unlisted spores, not another colony's", "  - {id: red-1}\n", true, []Change{
			{Action: Unchanged, ID: "red-1", Colony: "lab"},
			{Action: Pruned, ID: "lab-myco", Colony: "lab"},
			{Action: Pruned, ID: "red-lead", Colony: "lab"},
		}},
	}
	tests[0].spores = ""
	exported := Export("lab", stored, state.Settings{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs := []Document{exported}
			if tt.spores != "" {
				docs = doc(t, tt.spores)
			}
			p, err := MakePlan(docs, stored, state.Settings{}, Options{Prune: tt.prune})
			require.NoError(t, err)
			want := tt.want
			if tt.spores == "" {
				for _, s := range exported.Spec.Spores {
					want = append(want, Change{Action: Unchanged, ID: s.ID, Colony: "lab"})
				}
				require.False(t, p.Changed())
			}
			if d := cmp.Diff(want, p.Changes, cmpopts.IgnoreUnexported(Change{}), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("plan (-want +got):\n%s", d)
			}
		})
	}
}

func TestMakePlanRefuses(t *testing.T) {
	tests := []struct {
		name   string
		spores string
		err    string
		is     error
	}{
		{"a rank changed", "  - {id: red-1, rank: colony}\n",
			"lab.yaml:6: spec.spores[0].rank: spore red-1 has rank spore, not colony: a rank is fixed when the spore is created (delete it and create it again to change it)", nil},
		{"a spore of another colony", "  - {id: ops-1}\n",
			"lab.yaml:6: spec.spores[0].id: spore ops-1 is in colony ops, not lab: apply does not move a spore between colonies (delete it there first): already exists", state.ErrExists},
		{"a role left without its swarm", "  - {id: red-1, swarm: ''}\n",
			"lab.yaml:6: spec.spores[0].role: role dev needs a swarm", nil},
		{"a [swarm] mycologist without a swarm", "  - {id: new-1, rank: swarm}\n",
			"lab.yaml:6: spec.spores[0].swarm: a [swarm] mycologist orchestrates one swarm: it needs a swarm", nil},
		{"a second colony mycologist", "  - {id: new-myco, rank: colony}\n",
			"lab.yaml:6: spec.spores[0]: spore lab-myco is already colony lab's mycologist: already exists", state.ErrExists},
		{"a [swarm] mycologist moved into a swarm that has one", "  - {id: new-lead, rank: swarm, swarm: blue}\n  - {id: red-lead, swarm: blue}\n",
			"lab.yaml:6: spec.spores[0]: spore red-lead is already the [swarm] mycologist of swarm blue in colony lab: already exists\n" +
				"lab.yaml:7: spec.spores[1]: spore new-lead is already the [swarm] mycologist of swarm blue in colony lab: already exists", state.ErrExists},
		{"a loop on a plain spore", "  - {id: red-1, loop: 5m}\n",
			"lab.yaml:6: spec.spores[0].loop: only a [swarm] mycologist (rank swarm) has a loop; spore red-1 is rank spore", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := MakePlan(doc(t, tt.spores), stored, state.Settings{}, Options{})
			require.EqualError(t, err, tt.err)
			require.Empty(t, p.Changes)
			if tt.is != nil {
				require.ErrorIs(t, err, tt.is)
			} else {
				var fe *Error
				require.ErrorAs(t, err, &fe)
			}
		})
	}

	arch, err := Read("hq.yaml", []byte("apiVersion: sporectl/v1\nkind: Colony\nmetadata: {name: hq}\nspec:\n  spores:\n  - id: the-arch\n    desired: Paused\n"))
	require.NoError(t, err)
	_, err = MakePlan(arch, stored, state.Settings{}, Options{})
	require.EqualError(t, err, "hq.yaml:7: spec.spores[0].desired: spore the-arch is the [arch] mycologist, which is always on: want Running, not Paused")

	twice := append(doc(t, "  - {id: red-1}\n"), doc(t, "  - {id: red-2}\n")...)
	_, err = MakePlan(twice, stored, state.Settings{}, Options{})
	require.EqualError(t, err, "lab.yaml:3: metadata.name: colony lab is given by two documents (the other at lab.yaml:3: metadata.name)")
	other, err := Read("ops.yaml", []byte("apiVersion: sporectl/v1\nkind: Colony\nmetadata: {name: ops}\nspec:\n  spores:\n  - {id: red-1}\n"))
	require.NoError(t, err)
	_, err = MakePlan(append(doc(t, "  - {id: red-1}\n"), other...), stored, state.Settings{}, Options{})
	require.ErrorContains(t, err, "ops.yaml:6: spec.spores[0].id: spore red-1 is listed twice (first at lab.yaml:6: spec.spores[0])")
}

// TestPlanIdleSleep: a document's colony settings (sleepAfter,
// wakeOnMessage) and a spore's own sleepAfter are planned against the
// stored ones, a setting left out keeps the stored one, the export of a
// store plans unchanged, and an [arch] with a sleepAfter or a bad value is
// refused naming the line and field.
func TestPlanIdleSleep(t *testing.T) {
	read := func(t *testing.T, spec string) []Document {
		t.Helper()
		docs, err := Read("lab.yaml", []byte("apiVersion: sporectl/v1\nkind: Colony\nmetadata: {name: lab}\nspec:\n"+spec))
		require.NoError(t, err)
		return docs
	}
	settings := state.Settings{}.WithColony("lab", state.ColonySettings{SleepAfter: state.Duration(30 * time.Minute)})
	sp := slicesClone(stored)
	sp[2].SleepAfter = state.Duration(time.Hour) // red-1

	p, err := MakePlan(read(t, "  wakeOnMessage: true\n  spores:\n  - {id: red-1, sleepAfter: 2h}\n  - {id: red-lead}\n"), sp, settings, Options{})
	require.NoError(t, err)
	require.Len(t, p.Changes, 3)
	c := p.Changes[0]
	require.Equal(t, "colony", c.Kind())
	require.Equal(t, "lab", c.Name())
	require.Equal(t, &state.ColonySettings{SleepAfter: state.Duration(30 * time.Minute), WakeOnMessage: true}, c.Settings, "sleepAfter left out is kept")
	require.Equal(t, []Diff{{"wakeOnMessage", "false", "true"}}, c.Diffs)
	require.Equal(t, Configured, p.Changes[1].Action)
	require.Equal(t, []Diff{{"sleepAfter", "1h0m0s", "2h0m0s"}}, p.Changes[1].Diffs)
	require.Equal(t, ptr(2*time.Hour), p.Changes[1].SleepAfter)
	require.Equal(t, Unchanged, p.Changes[2].Action)

	p, err = MakePlan(read(t, "  sleepAfter: 30m\n  spores:\n  - {id: red-1, sleepAfter: 1h}\n"), sp, settings, Options{})
	require.NoError(t, err)
	require.False(t, p.Changed(), "the stored settings, said again")

	exp := Export("lab", sp, settings)
	require.Equal(t, ptr("30m0s"), exp.Spec.SleepAfter)
	require.Nil(t, exp.Spec.WakeOnMessage)
	p, err = MakePlan([]Document{exp}, sp, settings, Options{})
	require.NoError(t, err)
	require.False(t, p.Changed(), "an export plans unchanged")

	arch, err := Read("hq.yaml", []byte("apiVersion: sporectl/v1\nkind: Colony\nmetadata: {name: hq}\nspec:\n  spores:\n  - id: the-arch\n    sleepAfter: 10m\n"))
	require.NoError(t, err)
	_, err = MakePlan(arch, stored, state.Settings{}, Options{})
	require.EqualError(t, err, "hq.yaml:7: spec.spores[0].sleepAfter: spore the-arch is the [arch] mycologist, which is always on: it is never put to sleep")

	for text, want := range map[string]string{
		"  wakeOnMessage: yes\n  spores: []\n":        "lab.yaml:5: spec.wakeOnMessage: want true or false",
		"  sleepAfter: 10s\n  spores: []\n":           "lab.yaml:5: spec.sleepAfter: invalid value \"10s\": want 0 (none) or from 1m0s to 720h0m0s",
		"  spores:\n  - {id: red-1, sleepAfter: x}\n": "lab.yaml:6: spec.spores[0].sleepAfter: invalid value \"x\"",
	} {
		_, err := Read("lab.yaml", []byte("apiVersion: sporectl/v1\nkind: Colony\nmetadata: {name: lab}\nspec:\n"+text))
		require.ErrorContains(t, err, want, text)
	}
}

func slicesClone(s []state.Spore) []state.Spore { return append([]state.Spore(nil), s...) }
