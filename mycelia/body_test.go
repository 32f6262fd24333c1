package mycelia

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// TestStrictBodies: what encoding/json let through — a name twice (the
// last won: a sleeping spore woken by {"wake":false,"wake":true}), a
// name in another case ("WAKE" taken for "wake") and a lone surrogate
// beside a U+FFFD — is refused on every route with a body: 400, and
// nothing written, woken, delivered or compacted.
func TestStrictBodies(t *testing.T) {
	const (
		dup  = `appears more than once`
		lone = `a \u escape that is not a character (a lone surrogate) in field "text"`
	)
	cases := []struct {
		name, caller, path, body, msg string
	}{
		{"tell: wake twice", "lab-myco", "/spores/lab-b/prompt", `{"text":"wake up","wake":false,"wake":true}`, `field "wake" ` + dup},
		{"tell: WAKE", "lab-myco", "/spores/lab-b/prompt", `{"text":"wake up","WAKE":true}`, `unknown field "WAKE"`},
		{"tell: Text", "lab-myco", "/spores/lab-b/prompt", `{"Text":"wake up","wake":true}`, `unknown field "Text"`},
		{"tell: force twice", "lab-myco", "/spores/lab-c/prompt", `{"text":"hi","force":true,"force":true}`, `field "force" ` + dup},
		{"tell: lone surrogate and U+FFFD", "lab-myco", "/spores/lab-b/prompt", `{"text":"a\ud800 \ufffd","wake":true}`, lone},
		{"tell: lone surrogate and a literal U+FFFD", "lab-myco", "/spores/lab-c/prompt", "{\"text\":\"a\\ud800 \uFFFD\"}", lone},
		{"summons: text twice", "lab-a", "/api/mycologist/summons", `{"text":"a","text":"b"}`, `field "text" ` + dup},
		{"summons: TEXT", "lab-a", "/api/mycologist/summons", `{"TEXT":"help"}`, `unknown field "TEXT"`},
		{"summons: lone surrogate and U+FFFD", "lab-a", "/api/mycologist/summons", `{"text":"\ufffd\udfff"}`, lone},
		{"swarm tell: role twice", "lab-a", "/api/swarm/tell", `{"role":"tester","role":"lead","text":"hi"}`, `field "role" ` + dup},
		{"swarm tell: Role", "lab-a", "/api/swarm/tell", `{"role":"tester","Role":"lead","text":"hi"}`, `unknown field "Role"`},
		{"swarm tell: lone surrogate and U+FFFD", "lab-a", "/api/swarm/tell", `{"role":"tester","text":"\ud800\ufffd"}`, lone},
		{"swarm loop: every twice", "lab-lead", "/api/swarm/loop", `{"every":"10m","every":"1h"}`, `field "every" ` + dup},
		{"swarm loop: Every", "lab-lead", "/api/swarm/loop", `{"Every":"10m"}`, `unknown field "Every"`},
		{"swarm compact: role twice", "lab-lead", "/api/swarm/compact", `{"role":"coder","role":"coder"}`, `field "role" ` + dup},
		{"swarm compact: ROLE", "lab-lead", "/api/swarm/compact", `{"ROLE":"coder"}`, `unknown field "ROLE"`},
		{"report: kind twice", "lab-a", "/api/mycologist/report", `{"kind":"push","kind":"deploy","text":"pushed"}`, `field "kind" ` + dup},
		{"report: Kind", "lab-a", "/api/mycologist/report", `{"Kind":"push","text":"pushed"}`, `unknown field "Kind"`},
		{"report: lone surrogate and U+FFFD", "lab-a", "/api/mycologist/report", `{"kind":"push","text":"\ud800\ufffd"}`, lone},
	}
	h := newHarness(t).colony()
	ids := []string{"arch", "lab-myco", "lab-lead", "lab-a", "lab-b", "lab-c", "far-myco", "far-x"}
	events := func() (n int) {
		for _, id := range ids {
			n += len(h.events(id))
		}
		return n
	}
	before := events()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := h.do(c.caller, "POST", c.path, c.body)
			require.Equal(t, http.StatusBadRequest, r.status, "answer: %s", r.body)
			var e Error
			r.decode(t, &e)
			require.Equal(t, CodeBadRequest, e.Code)
			require.Contains(t, e.Message, c.msg)
			require.NotContains(t, e.Message, "wake up", "an error quotes the body")

			require.Zero(t, h.st.updates.Load(), "a refused body wrote to the store")
			require.Equal(t, before, events(), "a refused body added an event")
			require.Equal(t, state.Paused, h.spore("lab-b").Desired, "a refused body woke a spore")
			require.Zero(t, h.spore("lab-lead").Loop, "a refused body set a loop")
			require.Zero(t, h.compactsOf("lab-a"), "a refused body compacted a spore")
			for _, id := range ids {
				require.Empty(t, h.prompts(id), "a refused body reached the bridge of %s", id)
			}
		})
	}
}
