package reconcile_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
	"github.com/sporectl/sporectl/state/statetest"
)

// damagedEnv is an env over a directory store that is not checked when
// the test ends (its damage is the test's point), with spores a, b and c
// awake and each with lines ingested.
func damagedEnv(t *testing.T) (*env, string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "store")
	ds, _, err := dirstore.Init(context.Background(), root, state.Settings{Runtime: "local"}, dirstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ds.Close() })
	e := &env{t: t, st: &statetest.Counting{Store: ds}, rt: reconciletest.New(), now: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}
	for _, id := range []string{"a", "b", "c"} {
		statetest.Create(t, ds, state.Spore{Wish: state.Wish{ID: id, Colony: "lab", Rank: state.RankSpore, Desired: state.Running, Created: e.now, Updated: e.now}})
	}
	e.heal()
	for _, id := range []string{"a", "b", "c"} {
		e.rt.BridgeOf(id).Write(`{"type":"assistant","n":1}`, `{"type":"assistant","n":2}`)
	}
	e.heal()
	return e, root
}

// damageLine changes one committed line of spore id's event log so that
// its checksum no longer matches, as a flipped bit or a hand edit would.
func damageLine(t *testing.T, root, id string, line int) {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(root, "events", id+".*.log"))
	require.NoError(t, err)
	require.Len(t, logs, 1)
	b, err := os.ReadFile(logs[0])
	require.NoError(t, err)
	lines := strings.SplitAfter(string(b), "\n")
	require.Greater(t, len(lines), line)
	lines[line-1] = strings.Replace(lines[line-1], `"kind"`, `"KIND"`, 1)
	require.NoError(t, os.WriteFile(logs[0], []byte(strings.Join(lines, "")), 0o600))
}

func TestPassJudgesASporeWithADamagedLogAlone(t *testing.T) {
	e, root := damagedEnv(t)
	damageLine(t, root, "b", 2)
	// b's bridge holds lines not ingested yet: the pass reads the end of
	// b's log to check them, and meets the damage.
	e.rt.BridgeOf("b").Write(`{"type":"assistant","n":3}`)
	e.rt.BridgeOf("c").Write(`{"type":"assistant","n":3}`)
	e.rt.Kill("a", "OOMKilled")
	starts := e.rt.Calls("Start")

	out, err := e.pass().Run(context.Background(), reconcile.Options{Heal: true, Deliver: true})
	require.NoError(t, err, "one spore's damage must not fail the pass")
	hb := health(out, "b")
	require.Equal(t, policy.Error, hb.Effective)
	require.Equal(t, reconcile.ReasonStoreDamage, hb.Code)
	require.Contains(t, hb.Reason, "store damage: events/b.")
	require.Contains(t, hb.Reason, ".log:2: checksum mismatch")
	require.Equal(t, starts+1, e.rt.Calls("Start"), "a, killed meanwhile, is healed by the same pass")
	require.Equal(t, uint64(3), e.spore("c").BridgeSeq, "c's new line is ingested")
	require.Equal(t, uint64(2), e.spore("b").BridgeSeq, "b is not ingested while damaged")
	require.Equal(t, state.Health("Error"), e.spore("b").Health)
	require.Equal(t, string(reconcile.ReasonStoreDamage), e.spore("b").HealthReason)

	// The mark holds on a pass that reads nothing of b's log, and is
	// recorded once: no write when nothing else changed.
	e.heal() // a, started by the last pass, is seen up
	before := e.st.Updates.Load()
	out = e.heal()
	require.Equal(t, reconcile.ReasonStoreDamage, health(out, "b").Code)
	require.Equal(t, before, e.st.Updates.Load())

	// check still names it.
	rep, err := e.st.Check(context.Background())
	require.NoError(t, err)
	require.False(t, rep.OK())
	require.Contains(t, rep.Problems[0].Where, "events/b.")
}

func TestPassOverNamedSporesMeetsDamageAlone(t *testing.T) {
	e, root := damagedEnv(t)
	damageLine(t, root, "b", 2)
	e.rt.BridgeOf("b").Write(`{"n":3}`)
	e.rt.BridgeOf("a").Write(`{"n":3}`)
	out, err := e.pass().Run(context.Background(), reconcile.Options{IDs: []string{"a", "b"}})
	require.NoError(t, err)
	require.Equal(t, reconcile.ReasonStoreDamage, health(out, "b").Code)
	require.Equal(t, policy.Healthy, health(out, "a").Effective)
	require.Equal(t, uint64(3), e.spore("a").BridgeSeq)
}

// On PostgreSQL one row with an impossible value stopped every whole-fleet
// read: now it is judged alone, nothing of it written, and the pass goes
// on for the others (their lines ingested, a dead one healed).
func TestPassJudgesAnUnreadableRecordAlonePG(t *testing.T) {
	e, url := newPGEnv(t, "a", "b", "c")
	for _, id := range []string{"a", "b", "c"} {
		e.setDesired(id, state.Running)
	}
	e.heal()
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	_, err = conn.Exec(context.Background(), `UPDATE sporectl.spores SET colony = 'Not Valid' WHERE id = 'b'`)
	require.NoError(t, err)
	e.rt.BridgeOf("c").Write(`{"type":"assistant","n":1}`)
	e.rt.Kill("a", "OOMKilled")
	starts := e.rt.Calls("Start")

	for _, opt := range []reconcile.Options{{Heal: true, Deliver: true}, {IDs: []string{"b", "c"}}} {
		out, err := e.pass().Run(context.Background(), opt)
		require.NoError(t, err, "one row's damage must not fail the pass")
		hb := health(out, "b")
		require.Equal(t, policy.Error, hb.Effective)
		require.Equal(t, reconcile.ReasonStoreDamage, hb.Code)
		require.Contains(t, hb.Reason, "store damage: table sporectl.spores")
		require.Contains(t, hb.Reason, "id=b")
	}
	require.Equal(t, starts+1, e.rt.Calls("Start"), "a is healed by the same pass")
	require.Equal(t, uint64(1), e.spore("c").BridgeSeq, "c's line is ingested")

	// Put right by hand, b is read and judged again (the end-of-test
	// check then passes).
	_, err = conn.Exec(context.Background(), `UPDATE sporectl.spores SET colony = 'lab' WHERE id = 'b'`)
	require.NoError(t, err)
	require.Equal(t, policy.Healthy, health(e.heal(), "b").Effective)
}
