package reconcile_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/incident"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// summonsLines are when the fake bridges stamp their lines (from
// 2026-01-01 00:00:00, one second per line); the passes of these tests
// run an hour later, so every line is inside the incidents' window.
var summonsNow = time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)

// summonsStores are the backends the summons tests run on.
var summonsStores = []string{"dir", "postgres"}

// newSummonsEnv is an env over the named backend with an [arch]
// mycologist "arch" (unless withoutArch) and the given spores, all awake
// and started by a first healing pass.
func newSummonsEnv(t *testing.T, backend string, withoutArch bool, ids ...string) *env {
	t.Helper()
	ctx := context.Background()
	var st state.Store
	switch backend {
	case "dir":
		st = statetest.Dir(t, state.Settings{Runtime: "local"})
	case "postgres":
		st, _ = statetest.Postgres(t, state.Settings{Runtime: "local"})
	}
	e := &env{t: t, st: &statetest.Counting{Store: st}, rt: reconciletest.New(), now: summonsNow}
	all := ids
	if !withoutArch {
		all = append([]string{"arch"}, ids...)
	}
	for _, id := range all {
		rank := state.RankSpore
		if id == "arch" {
			rank = state.RankArch
		}
		require.NoError(t, st.Update(ctx, func(tx state.Tx) error {
			return tx.CreateSpore(ctx, state.Spore{Wish: state.Wish{ID: id, Colony: "lab", Rank: rank, Desired: state.Running, Created: e.now, Updated: e.now}})
		}))
	}
	e.heal()
	for _, id := range all {
		require.NotNil(t, e.rt.BridgeOf(id), "%s started", id)
	}
	return e
}

func agentInit(cwd string) string {
	b, _ := json.Marshal(map[string]any{"type": "system", "subtype": "init", "cwd": cwd, "session_id": "s"})
	return string(b)
}

func agentToolUse(id, name string, input map[string]string) string {
	b, _ := json.Marshal(map[string]any{"type": "assistant", "message": map[string]any{"content": []any{
		map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}}}})
	return string(b)
}

func agentToolResult(id string, isError bool, content string) string {
	b, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"content": []any{
		map[string]any{"type": "tool_result", "tool_use_id": id, "is_error": isError, "content": content}}}})
	return string(b)
}

func edit(id, path string) string {
	return agentToolUse(id, "Edit", map[string]string{"file_path": path, "old_string": "a", "new_string": "b"})
}

// summonses are the summons in the [arch]'s outbox (read-only passes do
// not deliver, so every one raised is there).
func (e *env) summonses() []state.OutboxEntry {
	e.t.Helper()
	var out []state.OutboxEntry
	for _, p := range e.pending("arch") {
		if p.From == reconcile.SummonsFrom {
			out = append(out, p)
		}
	}
	return out
}

// incidentKeys are sp's incident keys, without the entries that count
// each sender's summonses ("summons:<sender>", summonsCounts).
func incidentKeys(sp state.Spore) []string {
	var out []string
	for _, in := range sp.Incidents {
		if !strings.HasPrefix(in.Key, "summons:") {
			out = append(out, in.Key)
		}
	}
	return out
}

// summonsCounts are the entries of sp.Incidents that count its senders'
// summonses.
func summonsCounts(sp state.Spore) []string {
	var out []string
	for _, in := range sp.Incidents {
		if strings.HasPrefix(in.Key, "summons:") {
			out = append(out, in.Key)
		}
	}
	return out
}

// readOnly is a `status`: it ingests and commits, delivers nothing.
func (e *env) readOnly() { e.run(reconcile.Options{}) }

func TestSummonsCollisionIsRaisedOncePerIncident(t *testing.T) {
	for _, backend := range summonsStores {
		t.Run(backend, func(t *testing.T) {
			e := newSummonsEnv(t, backend, false, "a", "b", "c")
			a, b, c := e.rt.BridgeOf("a"), e.rt.BridgeOf("b"), e.rt.BridgeOf("c")
			a.Write(agentInit("/homes/a"), edit("e1", "/homes/a/repo/x.go"))
			b.Write(agentInit("/homes/b/"), agentToolUse("e2", "Write", map[string]string{"file_path": "/homes/b/repo/x.go", "content": "x"}))
			c.Write(agentInit("/homes/c"), agentToolUse("r1", "Read", map[string]string{"file_path": "/homes/c/repo/x.go"}))
			e.readOnly()

			got := e.summonses()
			require.Len(t, got, 1, "one collision: a and b edited repo/x.go (c only read it)")
			text := got[0].Text
			require.True(t, strings.HasPrefix(text, reconcile.SummonsMark), text)
			for _, want := range []string{`"repo/x.go"`, "a (1 edit", "b (1 edit", "`mycologist collisions`", "`mycologist spore a`", "`mycologist spore b`"} {
				require.Contains(t, text, want)
			}
			require.NotContains(t, text, "spore c`")
			arch := e.spore("arch")
			require.Equal(t, []string{"collision:a,b:repo/x.go"}, incidentKeys(arch))
			require.Equal(t, e.now, arch.Incidents[0].At)
			// Recorded as every message is: an event in the [arch]'s log
			// naming the sender and the entry.
			var msgs []state.Event
			for _, ev := range e.events("arch") {
				if ev.Kind == state.KindMessage && ev.From == reconcile.SummonsFrom {
					msgs = append(msgs, ev)
				}
			}
			require.Len(t, msgs, 1)
			require.Equal(t, got[0].ID, msgs[0].Action)
			require.Equal(t, text, msgs[0].Text)

			// Later passes see the same collision: nothing more, nothing
			// written when nothing was ingested.
			before := e.st.Updates.Load()
			e.readOnly()
			e.readOnly()
			require.Equal(t, before, e.st.Updates.Load(), "a pass that ingested nothing writes nothing")
			a.Write(edit("e3", "/homes/a/repo/x.go"))
			e.readOnly()
			require.Len(t, e.summonses(), 1, "more edits by the same spores: the same incident")

			// A new file both edit: a new incident.
			a.Write(edit("e4", "/homes/a/repo/y.go"))
			b.Write(edit("e5", "/homes/b/repo/y.go"))
			e.readOnly()
			got = e.summonses()
			require.Len(t, got, 2)
			require.Contains(t, got[1].Text, `"repo/y.go"`)

			// A third spore on x.go, later: its edit meets a's and b's
			// from earlier passes (they count tool calls in their records).
			c.Write(edit("e6", "/homes/c/repo/x.go"))
			e.readOnly()
			got = e.summonses()
			require.Len(t, got, 3)
			require.Contains(t, got[2].Text, "3 spores edited the same file \"repo/x.go\"")
			require.Equal(t, []string{"collision:a,b:repo/x.go", "collision:a,b:repo/y.go", "collision:a,b,c:repo/x.go"}, incidentKeys(e.spore("arch")))

			// The next delivering pass prompts the [arch] with them.
			e.heal()
			require.Empty(t, e.summonses())
			var prompted []string
			for _, p := range e.rt.BridgeOf("arch").Prompts() {
				if p.From == reconcile.SummonsFrom {
					prompted = append(prompted, p.Text)
				}
			}
			require.Len(t, prompted, 3)

			// No token of any spore in any summons.
			for _, id := range []string{"arch", "a", "b", "c"} {
				ep, err := e.rt.Bridge(context.Background(), id)
				require.NoError(t, err)
				require.NotEmpty(t, ep.Token)
				for _, p := range prompted {
					require.NotContains(t, p, ep.Token)
				}
			}
		})
	}
}

func TestSummonsFailedDeployIsRaisedOnce(t *testing.T) {
	for _, backend := range summonsStores {
		t.Run(backend, func(t *testing.T) {
			e := newSummonsEnv(t, backend, false, "a", "b")
			a, b := e.rt.BridgeOf("a"), e.rt.BridgeOf("b")
			// b deploys fine, a's push is rejected; a's tool call and its
			// result arrive in different passes.
			b.Write(agentToolUse("d1", "Bash", map[string]string{"command": "kubectl apply -f k8s/"}), agentToolResult("d1", false, "configured"))
			a.Write(agentToolUse("p1", "Bash", map[string]string{"command": "git push origin main"}))
			e.readOnly()
			require.Empty(t, e.summonses(), "nothing failed yet")

			a.Write(agentToolResult("p1", true, "rejected: non-fast-forward"), agentToolResult("x1", true, "grep: no match"))
			e.readOnly()
			got := e.summonses()
			require.Len(t, got, 1)
			var seq uint64
			for _, ev := range e.events("a") {
				if ev.Kind == state.KindAgent && strings.Contains(string(ev.Line), "git push origin main") {
					seq = ev.Seq
				}
			}
			require.NotZero(t, seq)
			require.Equal(t, []string{"failed:a:" + uintString(seq)}, incidentKeys(e.spore("arch")))
			for _, want := range []string{"Failed push: spore a", `"git push origin main"`, "`mycologist deploys`", "`mycologist spore a`"} {
				require.Contains(t, got[0].Text, want)
			}

			// Another failed result of a: the same failed push, not raised again.
			a.Write(agentToolResult("x2", true, "exit 1"))
			e.readOnly()
			e.readOnly()
			require.Len(t, e.summonses(), 1)
		})
	}
}

func uintString(n uint64) string { return strconv.FormatUint(n, 10) }

func TestSummonsFailedReportIsRaisedOnce(t *testing.T) {
	for _, backend := range summonsStores {
		t.Run(backend, func(t *testing.T) {
			e := newSummonsEnv(t, backend, false, "a")
			ctx := context.Background()
			report := func() (seq uint64, raised int) {
				require.NoError(t, e.st.Update(ctx, func(tx state.Tx) error {
					evs, err := tx.Append(ctx, "a", []state.Event{{Kind: state.KindLifecycle, Action: incident.ReportAction(incident.ReportDeploy, true), From: "spore:a", At: e.now, Text: "helm upgrade web: timed out"}})
					if err != nil {
						return err
					}
					seq = evs[0].Seq
					d := incident.Deploy{Spore: "a", At: evs[0].At, Seq: seq, Kind: incident.ReportDeploy, Source: incident.SourceReport, Failed: true, What: evs[0].Text}
					got, err := reconcile.Summon(ctx, tx, "", []reconcile.Summons{reconcile.DeploySummons(d)}, e.now)
					raised = len(got)
					return err
				}))
				return seq, raised
			}
			seq, n := report()
			require.Equal(t, 1, n)
			got := e.summonses()
			require.Len(t, got, 1)
			require.Contains(t, got[0].Text, "Failed deploy: spore a")
			require.Contains(t, got[0].Text, `it reported "helm upgrade web: timed out"`)
			require.Equal(t, []string{"failed:a:" + uintString(seq)}, incidentKeys(e.spore("arch")))

			// The same report seen again (as a pass scanning a's window
			// would): the same key, nothing raised, nothing written.
			d := incident.Deploy{Spore: "a", Seq: seq, Kind: incident.ReportDeploy, Source: incident.SourceReport, Failed: true}
			require.NoError(t, e.st.Update(ctx, func(tx state.Tx) error {
				got, err := reconcile.Summon(ctx, tx, "arch", []reconcile.Summons{reconcile.DeploySummons(d)}, e.now)
				require.Empty(t, got)
				return err
			}))
			require.Len(t, e.summonses(), 1)
			// A new failed report is a new incident.
			_, n = report()
			require.Equal(t, 1, n)
			require.Len(t, e.summonses(), 2)
		})
	}
}

func TestSummonsConcurrentPassesRaiseOnce(t *testing.T) {
	for _, backend := range summonsStores {
		t.Run(backend, func(t *testing.T) {
			e := newSummonsEnv(t, backend, false, "a", "b")
			e.rt.BridgeOf("a").Write(edit("e1", "/r/x.go"), agentToolUse("p1", "Bash", map[string]string{"command": "make deploy"}), agentToolResult("p1", true, "boom"))
			e.rt.BridgeOf("b").Write(edit("e2", "/r/x.go"))
			var wg sync.WaitGroup
			errs := make([]error, 8)
			for i := range errs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, errs[i] = e.pass().Run(context.Background(), reconcile.Options{})
				}()
			}
			wg.Wait()
			for _, err := range errs {
				require.NoError(t, err)
			}
			got := e.summonses()
			require.Len(t, got, 2, "one collision and one failed deploy, however many passes: %v", incidentKeys(e.spore("arch")))
			keys := incidentKeys(e.spore("arch"))
			require.Len(t, keys, 2)
			require.Contains(t, keys, "collision:a,b:/r/x.go")
		})
	}
}

func TestSummonsWithoutArchRaisesNothing(t *testing.T) {
	e := newSummonsEnv(t, "dir", true, "a", "b")
	e.rt.BridgeOf("a").Write(edit("e1", "/r/x.go"), agentToolUse("p1", "Bash", map[string]string{"command": "git push"}), agentToolResult("p1", true, "rejected"))
	e.rt.BridgeOf("b").Write(edit("e2", "/r/x.go"))
	before := e.st.Updates.Load()
	e.readOnly()
	require.Equal(t, before+1, e.st.Updates.Load(), "the commit of the lines, and no other write")
	for _, id := range []string{"a", "b"} {
		for _, p := range e.pending(id) {
			require.NotEqual(t, reconcile.SummonsFrom, p.From)
		}
		require.Empty(t, e.spore(id).Incidents)
	}
	ctx := context.Background()
	require.NoError(t, e.st.Update(ctx, func(tx state.Tx) error {
		got, err := reconcile.Summon(ctx, tx, "", []reconcile.Summons{{Key: "failed:a:1", Text: "x"}}, e.now)
		require.Empty(t, got)
		return err
	}))
}

func TestSummonsPrunesOldKeys(t *testing.T) {
	e := newSummonsEnv(t, "dir", false)
	ctx := context.Background()
	old := e.now.Add(-reconcile.IncidentKeep - time.Minute)
	e.update("arch", func(sp *state.Spore) {
		sp.Incidents = []state.Incident{{Key: "failed:a:1", At: old}, {Key: "failed:a:2", At: e.now.Add(-time.Hour)}}
	})
	require.NoError(t, e.st.Update(ctx, func(tx state.Tx) error {
		_, err := reconcile.Summon(ctx, tx, "arch", []reconcile.Summons{{Key: "failed:a:3", Text: "x"}}, e.now)
		return err
	}))
	require.Equal(t, []string{"failed:a:2", "failed:a:3"}, incidentKeys(e.spore("arch")))

	// Past the bound, the oldest go first.
	var many []reconcile.Summons
	for i := range state.MaxIncidents + 10 {
		many = append(many, reconcile.Summons{Key: "k" + uintString(uint64(i)), Text: "x"})
	}
	e.now = e.now.Add(time.Minute)
	require.NoError(t, e.st.Update(ctx, func(tx state.Tx) error {
		got, err := reconcile.Summon(ctx, tx, "arch", many, e.now)
		require.Len(t, got, len(many))
		return err
	}))
	keys := incidentKeys(e.spore("arch"))
	require.Len(t, keys, state.MaxIncidents)
	require.Equal(t, "k"+uintString(uint64(len(many)-1)), keys[len(keys)-1])
	require.NotContains(t, keys, "failed:a:2")
}

// eventReads counts the log reads (Events, Tail) of every transaction.
type eventReads struct {
	state.Store
	n atomic.Int64
}

type eventReadsTx struct {
	state.Tx
	n *atomic.Int64
}

func (s *eventReads) View(ctx context.Context, fn func(state.Tx) error) error {
	return s.Store.View(ctx, func(tx state.Tx) error { return fn(eventReadsTx{tx, &s.n}) })
}

func (s *eventReads) Update(ctx context.Context, fn func(state.Tx) error) error {
	return s.Store.Update(ctx, func(tx state.Tx) error { return fn(eventReadsTx{tx, &s.n}) })
}

func (t eventReadsTx) Events(ctx context.Context, id string, after uint64, limit int) ([]state.Event, error) {
	t.n.Add(1)
	return t.Tx.Events(ctx, id, after, limit)
}

func (t eventReadsTx) Tail(ctx context.Context, id string, n int) ([]state.Event, error) {
	t.n.Add(1)
	return t.Tx.Tail(ctx, id, n)
}

// The cost bound: a pass that ingested nothing reads no log at all, even
// with incidents raised before and spores that edited in the window; one
// that ingested lines holding no edit, push, deploy or failure reads no
// more than ingest itself does.
func TestSummonsNoopPassReadsNoEvent(t *testing.T) {
	e := newSummonsEnv(t, "dir", false, "a", "b", "c")
	e.rt.BridgeOf("a").Write(edit("e1", "/r/x.go"))
	e.rt.BridgeOf("b").Write(edit("e2", "/r/x.go"))
	e.readOnly()
	require.Len(t, e.summonses(), 1)

	reads := &eventReads{Store: e.st}
	ps := e.pass()
	ps.Store = reads
	for _, opt := range []reconcile.Options{{}, {Heal: true, Deliver: true}, {}} {
		_, err := ps.Run(context.Background(), opt)
		require.NoError(t, err)
	}
	require.Zero(t, reads.n.Load(), "no-op passes read no event")

	// Plain text from c, its first lines: ingest reads no log for them
	// (nothing to check them against), and the summons step none either.
	text, _ := json.Marshal(map[string]any{"type": "assistant", "message": map[string]any{"content": []any{map[string]any{"type": "text", "text": "hello"}}}})
	e.rt.BridgeOf("c").Write(string(text))
	_, err := ps.Run(context.Background(), reconcile.Options{})
	require.NoError(t, err)
	require.Equal(t, uint64(1), e.spore("c").BridgeSeq, "ingested")
	require.Zero(t, reads.n.Load(), "lines without an edit, a push, a deploy or a failure: no read")
}

func TestSummonsNotAboutTheArchsOwnFailure(t *testing.T) {
	e := newSummonsEnv(t, "dir", false, "a")
	e.rt.BridgeOf("arch").Write(agentToolUse("p1", "Bash", map[string]string{"command": "git push"}), agentToolResult("p1", true, "rejected"), edit("e1", "/r/x.go"))
	e.rt.BridgeOf("a").Write(edit("e2", "/r/x.go"))
	e.readOnly()
	require.Equal(t, []string{"collision:a,arch:/r/x.go"}, incidentKeys(e.spore("arch")), "its collision with a, not its own failed push")
}
