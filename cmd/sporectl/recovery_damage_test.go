package main

// The recovery row "a spore's stored data is damaged", on both stores:
// one spore's stored data does not read, and every other spore is
// healed, ingested and delivered to by the same passes and listed by
// serve, while the damaged one is Error/StoreDamage until a person puts
// it right.

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/mycelia"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/pgstore/pgtest"
	"github.com/sporectl/sporectl/state/statetest"
)

// damageCase is what differs between the stores: how b's data is
// damaged, what check names, and how it is put right.
type damageCase struct {
	damage func(r *rig)
	// place is what check's report and b's reason name of the damage.
	place []string
	// putRight fixes the damage as a person would.
	putRight func(r *rig)
	// lostLine: b's damaged data may have been one line of its event
	// log, set aside by the repair (the directory store).
	lostLine bool
}

// TestRecoveryDamagedSpore — row "a spore's stored data is damaged" on
// the directory store: one committed line of b's event log is edited so
// that its checksum fails, while b's bridge holds lines not ingested
// yet, a's whole process tree is SIGKILLed and a prompt to c waits in the
// outbox. reconcile exits 3 (not 7): a is restarted and Healthy again, c's
// prompt is delivered, b is Error/StoreDamage naming the place; serve
// lists the others; check exits 7 naming the line. After `sporectl
// repair b` check is clean, the next pass ingests b's waiting lines, and
// every line of every spore is in the store once.
func TestRecoveryDamagedSpore(t *testing.T) {
	r := newRig(t, nil, echoInit()...)
	var damaged string
	runDamagedSpore(t, r, damageCase{
		damage: func(r *rig) { damaged = damageLastLine(r.t, r.store, "dmg-b") },
		place:  []string{"events/dmg-b.", "checksum mismatch"},
		putRight: func(r *rig) {
			out := r.ok("repair", "dmg-b")
			require.Contains(r.t, out, "damaged/", "repair names where the damaged bytes went: %s", out)
			t.Logf("repaired %s: %s", damaged, out)
		},
		lostLine: true,
	})
}

// TestRecoveryDamagedSporePG — the same row on PostgreSQL: b's row holds
// an impossible value (a colony outside the name grammar). repair
// --dry-run says it would set the row aside; the row is put right with
// SQL instead, and the next pass judges b again.
func TestRecoveryDamagedSporePG(t *testing.T) {
	r, dbURL := newPGRig(t)
	runDamagedSpore(t, r, damageCase{
		damage: func(r *rig) { pgExec(r.t, dbURL, `UPDATE sporectl.spores SET colony = 'Not Valid' WHERE id = 'dmg-b'`) },
		place:  []string{"sporectl.spores", "dmg-b"},
		putRight: func(r *rig) {
			// repair would set the unreadable row aside whole (the
			// spore leaves the store); a person who can put it right
			// with SQL keeps it.
			out := r.ok("repair", "dmg-b", "--dry-run")
			require.Contains(r.t, out, "would set the spore aside", "%s", out)
			pgExec(r.t, dbURL, `UPDATE sporectl.spores SET colony = 'lab' WHERE id = 'dmg-b'`)
		},
	})
}

// newPGRig is a rig on a PostgreSQL store of its own (skipped without
// PostgreSQL, failing in CI), with the local runtime.
func newPGRig(t *testing.T) (*rig, string) {
	t.Helper()
	dbURL := pgtest.NewDatabase(t)
	statetest.CheckPostgresOnCleanup(t, dbURL)
	stateHome := t.TempDir()
	r := &rig{t: t, store: dbURL, root: "/nonexistent", env: []string{"XDG_STATE_HOME=" + stateHome}}
	r.ok(append([]string{"init"}, echoInit()...)...)
	r.homeOf = func(id string) string {
		// The runtime keeps homes for a PostgreSQL store beside the
		// user's state; found once the first spore exists.
		if r.root == "/nonexistent" {
			roots, err := filepath.Glob(filepath.Join(stateHome, "sporectl", "local", "*"))
			if err == nil && len(roots) == 1 {
				r.root = roots[0]
			}
		}
		return filepath.Join(r.root, "homes", id)
	}
	return r, dbURL
}

// pgExec runs one statement on the store's database, as a person
// with psql would.
func pgExec(t *testing.T, dbURL, q string, args ...any) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, q, args...)
	require.NoError(t, err)
}

// damageLastLine edits the last event of spore id's log in a directory
// store so that its checksum fails (the pass reads the end of a log to
// check a bridge's new lines, and meets it there). It returns the line.
func damageLastLine(t *testing.T, root, id string) string {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(root, "events", id+".*.log"))
	require.NoError(t, err)
	require.Len(t, logs, 1)
	b, err := os.ReadFile(logs[0])
	require.NoError(t, err)
	lines := strings.SplitAfter(string(b), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if strings.Contains(lines[i], `"kind"`) {
			orig := lines[i]
			lines[i] = strings.Replace(lines[i], `"kind"`, `"KIND"`, 1)
			require.NoError(t, os.WriteFile(logs[0], []byte(strings.Join(lines, "")), 0o600))
			return strings.TrimSpace(orig)
		}
	}
	t.Fatalf("%s holds no event to damage", logs[0])
	return ""
}

func runDamagedSpore(t *testing.T, r *rig, dc damageCase) {
	const myco, a, b, c = "dmg-myco", "dmg-a", "dmg-b", "dmg-c"
	for _, id := range []string{myco, a, b, c} {
		flags := []string{"--colony", "lab"}
		if id == myco {
			flags = append(flags, "--rank", "colony")
		}
		r.t.Cleanup(func() { r.cleanup(id) })
		r.ok(append([]string{"create", id, "--wake"}, flags...)...)
		r.ok("wake", id, "--wait", "20s")
		r.waitHealthy(id, 30*time.Second)
	}
	pa, _ := r.prompt(a, "a: before the damage")
	pb, _ := r.prompt(b, "b: before the damage")
	pc, _ := r.prompt(c, "c: before the damage")
	for _, id := range []string{a, b, c} {
		r.settle(id, 30*time.Second)
	}

	// b's bridge numbers lines no pass has ingested.
	pb2, st := r.prompt(b, "b: answered while its data is damaged")
	require.Equal(t, "delivered", st)
	r.waitIdle(b, 10*time.Second)
	spB, _ := r.record(b)
	numberedB := r.bridgeLog(b)
	require.Less(t, spB.BridgeSeq, uint64(len(numberedB)), "b's new lines must wait in its bridge for this row to prove anything")
	// A prompt to c waits in the outbox for the pass to deliver.
	p := r.proxyBridge(c)
	p.set(func(p *bridgeProxy) { p.refusePrompts = true })
	pc2, st := r.prompt(c, "c: delivered by the pass that meets b's damage")
	require.Equal(t, "waiting", st)
	p.set(func(p *bridgeProxy) { p.refusePrompts = false })

	dc.damage(r)
	r.killTree(a)

	// The pass: b judged alone, the others healed and delivered to.
	res := r.run("reconcile", "-o", "json")
	require.Equal(t, 3, res.code, "one spore's damage is that spore's Error, not the store's (7): %s", res)
	var rep passReport
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &rep), "reconcile: %s", res)
	require.True(t, rep.did(a, "restart"), "the pass that meets b's damage restarts a: %+v", rep.Actions)
	_, pending := r.record(c)
	require.Empty(t, pending, "the pass that meets b's damage delivers c's prompt")
	requireDamaged(t, rep.spore(t, b), dc.place, false)
	require.NotEmpty(t, r.bridgePIDs(b), "b's bridge, which keeps its lines, is left running")
	r.waitHealthy(a, 30*time.Second)

	// status names the damage; it exits 3 (something needs a person).
	res = r.run("status", "-o", "json")
	require.Equal(t, 3, res.code, "status: %s", res)
	var all passReport
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &all), "status: %s", res)
	// (A pass that reads nothing of the damaged part, as status's may,
	// shows the mark an earlier pass recorded; check names the place.)
	requireDamaged(t, all.spore(t, b), dc.place, true)
	for _, id := range []string{myco, a, c} {
		require.Equal(t, "Healthy", all.spore(t, id).Effective, "status of %s beside a damaged spore", id)
	}

	// serve lists the others to their mycologist.
	addr := freeLoopback(t)
	serveStart(t, r.cmd("serve", "--addr", addr, "--address-check", "fallback"), "http://"+addr)
	tok, err := os.ReadFile(filepath.Join(r.home(myco), filepath.FromSlash(mycelia.TokenFile)))
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/api/spores", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	req.Header.Set(mycelia.HeaderSpore, myco)
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "GET /api/spores beside a damaged spore: %s", body)
	var list mycelia.SporeList
	require.NoError(t, json.Unmarshal(body, &list), "%s", body)
	listed := map[string]mycelia.SporeInfo{}
	for _, s := range list.Spores {
		listed[s.ID] = s
	}
	for _, id := range []string{a, c} {
		require.Contains(t, listed, id, "serve lists %s: %s", id, body)
		require.Equal(t, "Healthy", listed[id].Effective, "%s: %s", id, body)
	}
	if s, ok := listed[b]; ok {
		require.Equal(t, "Error", s.Effective, "a damaged spore listed is listed as Error: %s", body)
	}

	// check names the place.
	res = r.run("check")
	require.Equal(t, 7, res.code, "check: %s", res)
	for _, w := range dc.place {
		require.Contains(t, res.stdout+res.stderr, w, "check names the damage: %s", res)
	}

	// A person puts it right; b is judged again and its waiting lines
	// are ingested.
	dc.putRight(r)
	require.Contains(t, r.ok("check"), "ok:")
	r.settle(b, 30*time.Second)
	require.Equal(t, "Healthy", r.waitHealthy(b, 30*time.Second).Effective)
	stored := map[uint64]int{}
	for _, e := range r.storedEvents(b) {
		if e.Kind == state.KindAgent {
			stored[e.BridgeSeq]++
		}
	}
	lost := 0
	for _, rec := range r.bridgeLog(b) {
		n := stored[rec.Seq]
		if n == 0 && dc.lostLine && rec.Seq <= spB.BridgeSeq && lost == 0 {
			lost++ // the damaged line, set aside under damaged/
			continue
		}
		require.Equal(t, 1, n, "b's line %d (stored bridge_seq was %d when damaged) is in the store %d times", rec.Seq, spB.BridgeSeq, n)
	}
	_, pending = r.record(b)
	require.Empty(t, pending)
	for _, txt := range []string{"b: before the damage", "b: answered while its data is damaged"} {
		require.Contains(t, r.ok("chat", b), "echo: "+txt, "b's conversation after the repair")
	}
	turns := map[string]int{}
	for _, e := range r.storedEvents(b) {
		if l := parseLine(t, e.Line); e.Kind == state.KindAgent && l.Subtype == "turn_started" {
			turns[l.PromptID]++
		}
	}
	require.Equal(t, map[string]int{pb: 1, pb2: 1}, turns, "b's turns, each in the store once")

	// Every line of the other spores is in the store once.
	p.detach(r, c)
	r.settle(a, 30*time.Second)
	r.settle(c, 30*time.Second)
	r.requireIntact(a, expect{echo: true, prompts: []sent{{id: pa, text: "a: before the damage", acked: true}}})
	r.requireIntact(c, expect{echo: true, prompts: []sent{
		{id: pc, text: "c: before the damage", acked: true},
		{id: pc2, text: "c: delivered by the pass that meets b's damage", acked: true}}})
}

// requireDamaged: b is Error/StoreDamage with the damage's place named,
// or (markOK) with the mark an earlier pass recorded.
func requireDamaged(t *testing.T, s sporeStatus, place []string, markOK bool) {
	t.Helper()
	require.Equal(t, "Error", s.Effective, "%+v", s)
	require.Contains(t, s.Reason, "store damage", "%+v", s)
	switch {
	case !markOK:
		require.Contains(t, s.Reason, place[0], "the reason names the place: %+v", s)
	default:
		require.True(t, strings.Contains(s.Reason, place[0]) || strings.Contains(s.Reason, "sporectl repair "+s.ID),
			"the reason names the place, or the mark an earlier pass recorded and what to do: %+v", s)
	}
}
