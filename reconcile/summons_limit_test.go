package reconcile_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
)

// failedPush is a Bash `git push` and its error result, as one bridge
// writes them.
func failedPush(id string) []string {
	return []string{
		agentToolUse(id, "Bash", map[string]string{"command": "git push origin " + id}),
		agentToolResult(id, true, "rejected: non-fast-forward"),
	}
}

// 100 failed pushes in one bridge batch, ingested by one pass: one
// summons that counts them and quotes the latest, every incident's key
// kept so none is raised again.
func TestSummonsOneBatchIsOneCoalescedSummons(t *testing.T) {
	for _, backend := range summonsStores {
		t.Run(backend, func(t *testing.T) {
			e := newSummonsEnv(t, backend, false, "w3")
			var lines []string
			for i := range 100 {
				lines = append(lines, failedPush(fmt.Sprintf("p%03d", i))...)
			}
			e.rt.BridgeOf("w3").Write(lines...)
			e.readOnly()

			got := e.summonses()
			require.Len(t, got, 1, "one summons for the sender's whole batch")
			text := got[0].Text
			require.True(t, strings.HasPrefix(text, reconcile.SummonsMark+"\n"), text)
			require.Contains(t, text, "Spore w3: 100 failed pushes since 2026-01-01T00:00:01Z. The latest: Failed push: spore w3")
			require.Contains(t, text, `"git push origin p099"`, "the latest quoted")
			require.NotContains(t, text, `"git push origin p098"`)
			require.Len(t, incidentKeys(e.spore("arch")), 100, "every incident's key kept")

			// Seen again by later passes: nothing more.
			e.rt.BridgeOf("w3").Write(agentToolResult("x", true, "grep: no match"))
			e.readOnly()
			require.Len(t, e.summonses(), 1)
		})
	}
}

// A sender may cause reconcile.SummonsLimit summonses in any
// reconcile.SummonsPer: past it, its incidents raise nothing (another
// spore's still do), and the first summons after the window counts
// what was held.
func TestSummonsSenderLimit(t *testing.T) {
	for _, backend := range summonsStores {
		t.Run(backend, func(t *testing.T) {
			e := newSummonsEnv(t, backend, false, "a", "b")
			a, b := e.rt.BridgeOf("a"), e.rt.BridgeOf("b")
			for i := range reconcile.SummonsLimit {
				a.Write(failedPush(fmt.Sprintf("p%d", i))...)
				e.readOnly()
			}
			got := e.summonses()
			require.Len(t, got, reconcile.SummonsLimit, "one per pass up to the limit")
			require.NotContains(t, got[reconcile.SummonsLimit-2].Text, "its limit")
			last := got[reconcile.SummonsLimit-1].Text
			require.Contains(t, last, fmt.Sprintf("This is the %dth summons caused by spore a in 1h0m0s, its limit: its incidents until 2026-01-01T02:00:00Z raise none", reconcile.SummonsLimit))

			// Over the limit: a's failures raise nothing and keep no key.
			keys := incidentKeys(e.spore("arch"))
			for i := range 3 {
				a.Write(failedPush(fmt.Sprintf("h%d", i))...)
				e.readOnly()
			}
			require.Len(t, e.summonses(), reconcile.SummonsLimit)
			require.Equal(t, keys, incidentKeys(e.spore("arch")))

			// b is not held back by a.
			b.Write(failedPush("q0")...)
			e.readOnly()
			got = e.summonses()
			require.Len(t, got, reconcile.SummonsLimit+1)
			require.Contains(t, got[reconcile.SummonsLimit].Text, "Failed push: spore b")

			// A window later, a's next failure raises one summons that
			// counts the three held and itself.
			e.now = e.now.Add(reconcile.SummonsPer)
			a.Write(failedPush("n0")...)
			e.readOnly()
			got = e.summonses()
			require.Len(t, got, reconcile.SummonsLimit+2)
			require.Contains(t, got[len(got)-1].Text, "Spore a: 4 failed pushes since")
			require.Contains(t, got[len(got)-1].Text, `"git push origin n0"`)
			require.NotContains(t, got[len(got)-1].Text, "its limit", "the old counts left the window")
			require.Equal(t, []string{"summons:a"}, summonsCounts(e.spore("arch")), "the counts of the hour before are dropped")
		})
	}
}

// A collision is charged to the spore whose edit in this pass made it:
// over its limit, the collision waits, and the other spore's next edit
// of the file raises it, charged to that spore.
func TestSummonsCollisionChargedToTheEditor(t *testing.T) {
	e := newSummonsEnv(t, "dir", false, "a", "b")
	a, b := e.rt.BridgeOf("a"), e.rt.BridgeOf("b")
	for i := range reconcile.SummonsLimit {
		a.Write(failedPush(fmt.Sprintf("p%d", i))...)
		e.readOnly()
	}
	require.Len(t, e.summonses(), reconcile.SummonsLimit)
	b.Write(edit("e1", "/r/x.go"))
	e.readOnly()
	a.Write(edit("e2", "/r/x.go"))
	e.readOnly()
	require.Len(t, e.summonses(), reconcile.SummonsLimit, "a's edit made the collision, and a is over its limit")
	require.NotContains(t, incidentKeys(e.spore("arch")), "collision:a,b:/r/x.go")

	b.Write(edit("e3", "/r/x.go"))
	e.readOnly()
	got := e.summonses()
	require.Len(t, got, reconcile.SummonsLimit+1)
	require.Contains(t, got[reconcile.SummonsLimit].Text, `Collision: 2 spores edited the same file "/r/x.go"`)
	require.Contains(t, summonsCounts(e.spore("arch")), "summons:b")
}
