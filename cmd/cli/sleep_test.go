package cli

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
	"github.com/sporectl/sporectl/state/statetest"
)

func TestIdleSleepFlagsParse(t *testing.T) {
	o, err := parse(t, newCmdCreate, "w-1", "--sleep-after", "45m")
	require.NoError(t, err)
	assert.Equal(t, 45*time.Minute, o.SleepAfter)

	s, err := parse(t, newCmdSetSleepAfter, "a", "b", "2h")
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, s.IDs)
	assert.Equal(t, 2*time.Hour, s.After)
	s, err = parse(t, newCmdSetSleepAfter, "a", "0")
	require.NoError(t, err)
	assert.Zero(t, s.After)

	c, err := parse(t, newCmdColonySet, "lab", "--sleep-after", "30m", "--wake-on-message")
	require.NoError(t, err)
	assert.Equal(t, "lab", c.Name)
	assert.Equal(t, 30*time.Minute, c.SleepAfter)
	assert.True(t, c.WakeOnMessage)
	c, err = parse(t, newCmdColonySet, "lab", "--wake-on-message=false")
	require.NoError(t, err)
	assert.False(t, c.changed("sleep-after"), "only the flags given change")
	assert.True(t, c.changed("wake-on-message"))

	for name, args := range map[string][]string{
		"create: under a minute":        {"w-1", "--sleep-after", "30s"},
		"create: not a duration":        {"w-1", "--sleep-after", "soon"},
		"create: on the arch":           {"w-1", "--rank", "arch", "--sleep-after", "1h"},
		"set: over 30 days":             {"a", "800h"},
		"set: no duration":              {"a"},
		"set: a bad id":                 {"Not An Id", "1h"},
		"colony set: nothing to change": {"lab"},
		"colony set: a bad name":        {"Lab!", "--wake-on-message"},
		"colony set: negative":          {"lab", "--sleep-after", "-1m"},
	} {
		var err error
		switch name[:3] {
		case "cre":
			var o *createOptions
			o, err = parse(t, newCmdCreate, args...)
			assert.Nil(t, o, name)
		case "set":
			var o *setSleepAfterOptions
			o, err = parse(t, newCmdSetSleepAfter, args...)
			assert.Nil(t, o, name)
		default:
			var o *colonySetOptions
			o, err = parse(t, newCmdColonySet, args...)
			assert.Nil(t, o, name)
		}
		require.Error(t, err, name)
		assert.Equal(t, ExitUsage, exitCode(err), "%s: %v", name, err)
	}
	_, err = parse(t, newCmdCreate, "w-1", "--sleep-after", "30s")
	assert.EqualError(t, err, `invalid value "30s" for --sleep-after: want 0 or a duration such as 30m, from 1m0s to 720h0m0s`)
}

func TestSetSleepAfterAndColonySet(t *testing.T) {
	store := fixture(t)
	st, err := dirstore.Open(t.Context(), store, dirstore.Options{})
	require.NoError(t, err)
	defer st.Close()

	require.Equal(t, "spore/worker-7 configured\nspore/lab-myco configured\n", mustRun(t, store, "set", "sleep-after", "worker-7", "lab-myco", "30m"))
	require.Equal(t, "spore/worker-7 unchanged\n", mustRun(t, store, "set", "sleep-after", "worker-7", "30m"))
	sp := statetest.Spore(t, st, "worker-7")
	require.Equal(t, state.Duration(30*time.Minute), sp.SleepAfter)
	evs := statetest.Events(t, st, "worker-7")
	require.Equal(t, "sleep-after", evs[len(evs)-1].Action)

	// The [arch] is refused, and with it the whole command: nothing of it
	// is written.
	r := run(t, store, "set", "sleep-after", "worker-7", "arch-1", "1h")
	require.Equal(t, ExitUsage, r.code, "%s", r.err)
	require.Contains(t, r.err, "always on")
	require.Equal(t, state.Duration(30*time.Minute), statetest.Spore(t, st, "worker-7").SleepAfter, "all or nothing")
	r = run(t, store, "set", "sleep-after", "ghost", "1h")
	require.Equal(t, ExitNotFound, r.code, "%s", r.err)

	require.Equal(t, "colony/lab configured\n", mustRun(t, store, "colony", "set", "lab", "--sleep-after", "2h"))
	require.Equal(t, "colony/lab configured\n", mustRun(t, store, "colony", "set", "lab", "--wake-on-message"))
	require.Equal(t, "colony/lab unchanged\n", mustRun(t, store, "colony", "set", "lab", "--wake-on-message"))
	require.Equal(t, "COLONY   SPORES   SLEEP-AFTER   WAKE-ON-MESSAGE   BUDGET   SPENT-TODAY\n"+
		"hq       1        never         false             none     0 tokens, $0.00\n"+
		"lab      2        2h0m0s        true              none     0 tokens, $0.00\n",
		mustRun(t, store, "colony", "list"))
	var doc struct {
		Colonies []struct {
			Name          string `json:"name"`
			SleepAfter    string `json:"sleep_after"`
			WakeOnMessage bool   `json:"wake_on_message"`
		} `json:"colonies"`
	}
	require.NoError(t, json.Unmarshal([]byte(mustRun(t, store, "colony", "ls", "-o", "json")), &doc))
	require.Len(t, doc.Colonies, 2)
	require.Equal(t, "2h0m0s", doc.Colonies[1].SleepAfter)
	require.True(t, doc.Colonies[1].WakeOnMessage)

	// Settings of a colony with no spores yet are kept and listed.
	mustRun(t, store, "colony", "set", "later", "--sleep-after", "10m")
	require.Contains(t, mustRun(t, store, "colony", "list"), "later    0        10m0s         false             none")
	mustRun(t, store, "colony", "set", "later", "--sleep-after", "0")
	require.NotContains(t, mustRun(t, store, "colony", "list"), "later", "the zero settings remove the colony")

	require.Equal(t, "spore/w-9 created\n", mustRun(t, store, "create", "w-9", "--colony", "lab", "--sleep-after", "90m"))
	require.Equal(t, state.Duration(90*time.Minute), statetest.Spore(t, st, "w-9").SleepAfter)
}

func TestReconcileReportsAnIdleSleep(t *testing.T) {
	p := &reconcile.SporePlan{Spore: state.Spore{Wish: state.Wish{ID: "a"}}, SleepIdle: true, Idle: 65*time.Second + time.Millisecond, Stop: true}
	for _, dry := range []bool{false, true} {
		require.Equal(t, []passAction{{Spore: "a", Action: "sleep", Detail: "idle for 1m5s"}}, actionsOf([]*reconcile.SporePlan{p}, dry), "dry run %v", dry)
	}
}
