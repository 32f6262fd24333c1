package ui

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
)

// The prompt box's over-budget switch, as the page draws it.
const (
	overSwitch = `<input type="checkbox" name="over_budget" value="1"> deliver even though over budget`
	overNote   = `<span class="note spend">over budget: `
)

// spend gives id a spend of tokens today (the fixture's clock), counted
// by the gateway, and, when b is not zero, its own budget b.
func (f *fixture) spend(id string, tokens int64, b state.Budget) {
	f.t.Helper()
	ctx := context.Background()
	now := f.h.now()
	require.NoError(f.t, f.st.Store.Update(ctx, func(tx state.Tx) error {
		if !b.IsZero() {
			if _, _, err := wish.SetBudget(ctx, tx, id, b, "user:ann", now); err != nil {
				return err
			}
		}
		_, err := state.CountModelCall(ctx, tx, id, "msg_"+id, state.Usage{InputTokens: tokens - tokens/2, OutputTokens: tokens / 2}, now)
		return err
	}))
}

// sleepByBudget records id's sleep by budget, as a pass does, and stops
// it on the fake runtime.
func (f *fixture) sleepByBudget(id string) {
	f.t.Helper()
	ctx := context.Background()
	require.NoError(f.t, f.st.Store.Update(ctx, func(tx state.Tx) error {
		_, _, err := wish.SleepBy(ctx, tx, id, state.ByBudget, ": over budget (24/20 tokens today)", f.h.now())
		return err
	}))
	require.NoError(f.t, f.rt.Stop(ctx, id))
}

// TestPromptBoxOverBudgetSwitch: the box offers "deliver even though
// over budget", with the spend against the budget, only to a spore that
// reached its own budget or its colony's; never to the [arch].
func TestPromptBoxOverBudgetSwitch(t *testing.T) {
	f := newFixture(t)
	f.colony()
	u, _ := loggedIn(t, f)

	page := u.get("/ui/spores/lab-a")
	require.NotContains(t, page.body, "over_budget", "no budget: no switch")
	require.NotContains(t, page.body, "over budget")

	// Under its budget: no switch.
	f.spend("lab-a", 19, state.Budget{TokensPerDay: 20})
	page = u.get("/ui/spores/lab-a")
	require.NotContains(t, page.body, "over_budget", "19/20: within budget")

	// At it: the switch, and what was spent against what.
	f.spend("lab-a", 24, state.Budget{})
	page = u.get("/ui/spores/lab-a")
	require.Equal(t, 1, strings.Count(page.body, overSwitch), page.body)
	require.Contains(t, page.body, overNote+`24/20 tokens today</span>`)
	// Its colony's other spores are within theirs.
	require.NotContains(t, u.get("/ui/spores/lab-c").body, "over_budget")

	// The colony's budget, over all its spores: lab-c is over it too.
	ctx := context.Background()
	require.NoError(t, f.st.Store.Update(ctx, func(tx state.Tx) error {
		_, err := wish.SetColony(ctx, tx, "lab", state.ColonySettings{Budget: state.Budget{TokensPerDay: 30}})
		return err
	}))
	f.spend("lab-c", 6, state.Budget{})
	page = u.get("/ui/spores/lab-c")
	require.Contains(t, page.body, overSwitch)
	require.Contains(t, page.body, overNote+`colony lab: 30/30 tokens today</span>`)
	// Another colony's spore is not, and the [arch] never is.
	require.NotContains(t, u.get("/ui/spores/far-x").body, "over_budget")
	require.NotContains(t, u.get("/ui/spores/arch").body, "over_budget")
}

// TestPromptOverBudgetDelivered: ticked, the prompt is marked over_budget
// in the outbox and delivered to the spore over its budget, as `prompt
// --over-budget`; what was queued for the budget before stays queued.
// Unticked, it stays queued with 409, and the answer says to tick it.
func TestPromptOverBudgetDelivered(t *testing.T) {
	f := newFixture(t)
	f.colony()
	logs := f.captureLog()
	f.spend("lab-a", 24, state.Budget{TokensPerDay: 20})
	u, csrf := loggedIn(t, f)

	before := f.written("lab-a")
	a := u.post("/ui/spores/lab-a/prompt", url.Values{"csrf": {csrf}, "text": {"held"}}, "Accept", "text/plain")
	require.Equal(t, http.StatusConflict, a.status, a.body)
	require.Equal(t, "spore lab-a is over budget (24/20 tokens today): the prompt is queued and is delivered the next UTC day or once its budget is raised. "+
		"To deliver a prompt now, tick \"deliver even though over budget\" and send it (this one stays queued).\n", a.body)
	held := f.written("lab-a").outbox
	require.Len(t, held, len(before.outbox)+1)
	require.False(t, held[len(held)-1].OverBudget)
	require.Empty(t, f.rt.BridgeOf("lab-a").Prompts())

	// Ticked, without a pass: recorded and marked.
	pass := f.h.Pass
	f.h.Pass = nil
	a = u.post("/ui/spores/lab-a/prompt", url.Values{"csrf": {csrf}, "text": {"now, please"}, "over_budget": {"1"}})
	require.Equal(t, http.StatusSeeOther, a.status, a.body)
	require.Equal(t, "/ui/spores/lab-a", a.header.Get("Location"))
	out := f.written("lab-a").outbox
	require.Len(t, out, len(held)+1)
	marked := out[len(out)-1]
	require.True(t, marked.OverBudget)
	require.Equal(t, "now, please", marked.Text)
	require.Equal(t, "user:alice", marked.From)
	require.Len(t, f.prompts("lab-a", before.head), 2)

	// Ticked, with the pass: delivered at once, the marked ones only.
	f.h.Pass = pass
	a = u.post("/ui/spores/lab-a/prompt", url.Values{"csrf": {csrf}, "text": {"and this"}, "over_budget": {"1"}})
	require.Equal(t, http.StatusSeeOther, a.status, a.body)
	got := f.rt.BridgeOf("lab-a").Prompts()
	require.Len(t, got, 2, "the two marked")
	require.Equal(t, marked.ID, got[0].ID)
	require.Equal(t, "and this", got[1].Text)
	left := f.written("lab-a").outbox
	require.Len(t, left, 1, "the unmarked one waits for the budget")
	require.Equal(t, held[len(held)-1].ID, left[0].ID)
	require.Equal(t, state.Running, f.written("lab-a").sp.Desired)
	require.Contains(t, logs.String(), "over_budget=true")
	require.NotContains(t, logs.String(), "and this", "no prompt text in the log")
}

// TestPromptOverBudgetAsleep: a spore a budget put to sleep takes the
// prompt without "wake it": unticked it is queued (409, still asleep);
// ticked it is woken and delivered. A spore a person put to sleep needs
// "wake it" as well: ticked alone it is refused, nothing written.
func TestPromptOverBudgetAsleep(t *testing.T) {
	f := newFixture(t)
	f.colony()
	f.h.WakeWait = 5 * time.Second
	f.spend("lab-a", 24, state.Budget{TokensPerDay: 20})
	f.sleepByBudget("lab-a")
	u, csrf := loggedIn(t, f)

	page := u.get("/ui/spores/lab-a")
	require.Contains(t, page.body, overSwitch)
	require.NotContains(t, page.body, "without this it is refused", "a spore asleep by budget takes every message")

	a := u.post("/ui/spores/lab-a/prompt", url.Values{"csrf": {csrf}, "text": {"held"}})
	require.Equal(t, http.StatusConflict, a.status, a.body)
	require.Contains(t, a.body, "lab-a is over budget (24/20 tokens today): the prompt is queued")
	w := f.written("lab-a")
	require.Equal(t, state.Paused, w.sp.Desired, "not woken")
	require.Len(t, w.outbox, 1)

	a = u.post("/ui/spores/lab-a/prompt", url.Values{"csrf": {csrf}, "text": {"wake and work"}, "over_budget": {"1"}})
	require.Equal(t, http.StatusSeeOther, a.status, a.body)
	w2 := f.written("lab-a")
	require.Equal(t, state.Running, w2.sp.Desired, "woken for it")
	require.Equal(t, w.sp.Generation+1, w2.sp.Generation)
	got := f.rt.BridgeOf("lab-a").Prompts()
	require.Len(t, got, 1, "started and delivered")
	require.Equal(t, "wake and work", got[0].Text)
	require.Equal(t, []state.OutboxEntry{w.outbox[0]}, w2.outbox, "the unmarked one still waits")

	// lab-b: asleep by a person, over budget.
	f.spend("lab-b", 24, state.Budget{TokensPerDay: 20})
	page = u.get("/ui/spores/lab-b")
	require.Contains(t, page.body, overSwitch)
	require.Contains(t, page.body, "asleep (desired Paused): without this it is refused")
	before := f.written("lab-b")
	a = u.post("/ui/spores/lab-b/prompt", url.Values{"csrf": {csrf}, "text": {"hi"}, "over_budget": {"1"}})
	require.Equal(t, http.StatusConflict, a.status, a.body)
	require.Contains(t, a.body, "lab-b is asleep (desired Paused): nothing was sent")
	require.Equal(t, before, f.written("lab-b"), "nothing written")

	a = u.post("/ui/spores/lab-b/prompt", url.Values{"csrf": {csrf}, "text": {"hi"}, "over_budget": {"1"}, "wake": {"1"}})
	require.Equal(t, http.StatusSeeOther, a.status, a.body)
	require.Equal(t, state.Running, f.written("lab-b").sp.Desired)
	got = f.rt.BridgeOf("lab-b").Prompts()
	require.Len(t, got, 1)
	require.Equal(t, "hi", got[0].Text)
	require.Empty(t, f.written("lab-b").outbox)
}

// TestPromptOverBudgetRefused: the switch changes none of the checks
// made before anything is written.
func TestPromptOverBudgetRefused(t *testing.T) {
	f := newFixture(t)
	f.colony()
	f.spend("lab-a", 24, state.Budget{TokensPerDay: 20})
	u, csrf := loggedIn(t, f)
	other := f.user()
	other.login(f.operator("bob"))
	otherCSRF := csrfOn(t, other.get("/ui/spores/lab-a").body)

	for _, tc := range []struct {
		name string
		form url.Values
		hdr  []string
		want int
		msg  string
	}{
		{"no csrf", url.Values{"text": {"hi"}, "over_budget": {"1"}}, nil, http.StatusForbidden, ""},
		{"another session's csrf", url.Values{"csrf": {otherCSRF}, "text": {"hi"}, "over_budget": {"1"}}, nil, http.StatusForbidden, ""},
		{"cross-origin", url.Values{"csrf": {csrf}, "text": {"hi"}, "over_budget": {"1"}}, []string{"Origin", "http://evil.example"}, http.StatusForbidden, ""},
		{"empty", url.Values{"csrf": {csrf}, "text": {" "}, "over_budget": {"1"}}, nil, http.StatusBadRequest, ""},
		{"over_budget twice", url.Values{"csrf": {csrf}, "text": {"hi"}, "over_budget": {"1", ""}}, []string{"Accept", "text/plain"}, http.StatusBadRequest,
			"the form could not be read: the field \"over_budget\" is sent more than once\n"},
	} {
		before := f.written("lab-a")
		a := u.post("/ui/spores/lab-a/prompt", tc.form, tc.hdr...)
		require.Equal(t, tc.want, a.status, "%s: %s", tc.name, a.body)
		if tc.msg != "" {
			require.Equal(t, tc.msg, a.body, tc.name)
		}
		require.Equal(t, before, f.written("lab-a"), "%s: nothing written", tc.name)
	}
	require.Empty(t, f.rt.BridgeOf("lab-a").Prompts())
}
