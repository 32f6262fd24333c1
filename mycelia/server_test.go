package mycelia

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/storetest"
)

func TestTellToASleepingSporeNeedsWake(t *testing.T) {
	h := newHarness(t).colony()
	r := h.do("lab-myco", "POST", "/spores/lab-b/prompt", TellRequest{Text: "wake up?"})
	require.Equal(t, http.StatusConflict, r.status)
	var e Error
	r.decode(t, &e)
	require.Equal(t, CodeAsleep, e.Code)
	require.Contains(t, e.Message, "spore lab-b is asleep (desired Paused)")
	require.Empty(t, h.messages("lab-b"))
	require.Equal(t, state.Paused, h.spore("lab-b").Desired)

	r = h.do("lab-myco", "POST", "/spores/lab-b/prompt", TellRequest{Text: "wake up!", Wake: true})
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	var res SendResponse
	r.decode(t, &res)
	require.True(t, res.Woke)
	require.Equal(t, Waiting, res.State, "a woken spore comes up after the answer")
	require.Equal(t, state.Running, h.spore("lab-b").Desired)
	require.Len(t, h.messages("lab-b"), 1)

	// The next pass delivers it, once.
	_, err := h.srv.Pass.Run(context.Background(), reconcile.Options{IDs: []string{"lab-b"}, Deliver: true})
	require.NoError(t, err)
	p := h.prompts("lab-b")
	require.Len(t, p, 1)
	require.Equal(t, res.ID, p[0].ID)
	require.Equal(t, "spore:lab-myco", p[0].From)
	require.True(t, strings.HasPrefix(p[0].Text, "[from the [colony] mycologist]\nwake up!"))
	require.Contains(t, p[0].Text, "`mycologist spore lab-b`", "a message says how to answer")
}

func TestTellToAWorkingSporeIsQueuedAtItsBridge(t *testing.T) {
	h := newHarness(t).colony()
	h.rt.BridgeOf("lab-a").SetState(bridge.StateWorking)
	r := h.do("lab-myco", "POST", "/spores/lab-a/prompt", TellRequest{Text: "when you are done"})
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	var res SendResponse
	r.decode(t, &res)
	// The fake bridge answers position 0; the real one its queue's place.
	require.Contains(t, []string{Delivered, Queued}, res.State)
	require.Len(t, h.prompts("lab-a"), 1)
}

// TestRetriedRequestIsRecordedOnce: a client that retries with the same
// request id (serve died before answering) gets one message, whether the
// first was still in the outbox or delivered already.
func TestRetriedRequestIsRecordedOnce(t *testing.T) {
	h := newHarness(t).colony()
	h.setDesired("lab-myco", state.Paused) // the summons wakes it
	ask := func(reqID string) SendResponse {
		t.Helper()
		r := h.do("lab-a", "POST", "/api/mycologist/summons", AskRequest{Text: "help"}, HeaderRequestID, reqID)
		require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
		var res SendResponse
		r.decode(t, &res)
		return res
	}
	first := ask("r-1")
	require.True(t, first.Woke)
	require.Equal(t, Waiting, first.State)
	again := ask("r-1")
	require.True(t, again.Duplicate)
	require.Equal(t, first.ID, again.ID)
	require.Len(t, h.messages("lab-myco"), 1)

	// Delivered meanwhile: a third try is still the same message.
	_, err := h.srv.Pass.Run(context.Background(), reconcile.Options{IDs: []string{"lab-myco"}, Deliver: true})
	require.NoError(t, err)
	require.Len(t, h.prompts("lab-myco"), 1)
	third := ask("r-1")
	require.True(t, third.Duplicate)
	require.Equal(t, Delivered, third.State)
	require.Len(t, h.messages("lab-myco"), 1)
	require.Len(t, h.prompts("lab-myco"), 1)

	// Another request id is another message; another caller's same id too.
	require.NotEqual(t, first.ID, ask("r-2").ID)
	require.Len(t, h.messages("lab-myco"), 2)
	r := h.do("lab-c", "POST", "/api/mycologist/summons", AskRequest{Text: "help"}, HeaderRequestID, "r-1")
	require.Equal(t, http.StatusAccepted, r.status)
	require.Len(t, h.messages("lab-myco"), 3)

	for _, bad := range []string{"has space", strings.Repeat("x", MaxRequestIDLen+1), "é"} {
		r := h.do("lab-a", "POST", "/api/mycologist/summons", AskRequest{Text: "help"}, HeaderRequestID, bad)
		require.Equal(t, http.StatusBadRequest, r.status, "request id %q", bad)
	}
	require.Len(t, h.messages("lab-myco"), 3)
}

// TestHostileBodies: whatever arrives, a clear 4xx and nothing written.
func TestHostileBodies(t *testing.T) {
	h := newHarness(t).colony()
	huge := `{"text": "` + strings.Repeat("x", MaxBodyBytes) + `"}`
	long := `{"text": "` + strings.Repeat("é", MaxTextBytes/2+1) + `"}`
	cases := []struct {
		name   string
		body   string
		status int
		msg    string
	}{
		{"huge", huge, http.StatusRequestEntityTooLarge, "larger than 131072 bytes"},
		{"long text", long, http.StatusRequestEntityTooLarge, "at most 65536"},
		{"empty body", "", http.StatusBadRequest, "the body is empty"},
		{"malformed", `{"text": "hi"`, http.StatusBadRequest, "malformed JSON"},
		{"not an object", `["hi"]`, http.StatusBadRequest, "the body is not a JSON object"},
		{"null", `null`, http.StatusBadRequest, "the body is not a JSON object"},
		{"wrong type", `{"text": 7}`, http.StatusBadRequest, `field "text" must be a string`},
		{"unknown field", `{"text": "hi", "from": "arch"}`, http.StatusBadRequest, `unknown field "from"`},
		{"two values", `{"text": "hi"} {"text": "again"}`, http.StatusBadRequest, "more than one JSON value"},
		{"blank", `{"text": "  \n "}`, http.StatusBadRequest, "text is empty"},
		{"bell", `{"text": "hi\u0007"}`, http.StatusBadRequest, "control character U+0007"},
		{"escape sequence", `{"text": "\u001b[2Jgone"}`, http.StatusBadRequest, "control character U+001B"},
		{"raw control", "{\"text\": \"a\x01b\"}", http.StatusBadRequest, "malformed JSON"},
		{"DEL", `{"text": "a\u007fb"}`, http.StatusBadRequest, "control character U+007F"},
		{"C1", `{"text": "a\u009bb"}`, http.StatusBadRequest, "control character U+009B"},
		{"invalid UTF-8", "{\"text\": \"caf\xe9\"}", http.StatusBadRequest, "not valid UTF-8"},
		{"lone surrogate", `{"text": "a\ud800b"}`, http.StatusBadRequest, "lone surrogate"},
	}
	routesWithText := map[string]func(text string) string{
		"/api/mycologist/summons": func(b string) string { return b },
		"/spores/lab-a/prompt":    func(b string) string { return b },
		"/api/swarm/tell":         func(b string) string { return strings.Replace(b, `{"text"`, `{"role": "tester", "text"`, 1) },
	}
	callerOf := map[string]string{"/api/mycologist/summons": "lab-a", "/spores/lab-a/prompt": "lab-myco", "/api/swarm/tell": "lab-a"}
	for path, wrap := range routesWithText {
		for _, c := range cases {
			t.Run(path+"/"+c.name, func(t *testing.T) {
				body := c.body
				if strings.HasPrefix(body, "{") {
					body = wrap(body)
				}
				r := h.do(callerOf[path], "POST", path, body)
				require.Equal(t, c.status, r.status, "answer: %.300s", r.body)
				var e Error
				r.decode(t, &e)
				require.Contains(t, e.Message, c.msg)
				require.Less(t, len(r.body), 1024, "an error echoes the body")
			})
		}
	}
	// Text that is fine: newlines, tabs, any language, U+FFFD sent as such.
	r := h.do("lab-a", "POST", "/api/mycologist/summons", `{"text": "line 1\n\tline 2 — 日本語 \ufffd"}`)
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	require.Len(t, h.messages("lab-myco"), 1)
	h.st.updates.Store(0)

	for _, c := range []struct{ name, body string }{
		{"bad role", `{"role": "Lead!", "text": "hi"}`},
		{"no role", `{"text": "hi"}`},
	} {
		r := h.do("lab-a", "POST", "/api/swarm/tell", c.body)
		require.Equal(t, http.StatusBadRequest, r.status, c.name)
		r = h.do("lab-lead", "POST", "/api/swarm/compact", strings.Replace(c.body, `, "text": "hi"`, "", 1))
		require.Equal(t, http.StatusBadRequest, r.status, c.name)
	}
	for _, q := range []string{"0", "51", "-1", "x", "1&turns=2", "99999999999999999999"} {
		r := h.do("arch", "GET", "/api/spores/lab-a?turns="+q, nil)
		require.Equal(t, http.StatusBadRequest, r.status, "turns=%s", q)
	}
	r = h.do("arch", "GET", "/api/spores/Lab_A", nil)
	require.Equal(t, http.StatusBadRequest, r.status)
	require.Zero(t, h.st.updates.Load(), "a refused body wrote to the store")
	require.Len(t, h.messages("lab-myco"), 1)
	require.Empty(t, h.messages("lab-a"))
	require.Empty(t, h.messages("lab-b"))
}

// TestNoTokenAnywhere: after every kind of request, good and bad, no
// token is in a log line, an answer, or the store's events.
func TestNoTokenAnywhere(t *testing.T) {
	h := newHarness(t).colony()
	var answers []string
	for _, rt := range Routes {
		row := matrix[rt.Name]
		for rank, caller := range callers {
			for _, in := range []bool{true, false} {
				path, body := row.request(caller, in)
				answers = append(answers, string(h.do(caller, rt.Method, path, body).body))
			}
			// A token where the id goes, and an id where the token goes.
			path, body := row.request(caller, true)
			r := h.do("", rt.Method, path, body, "Authorization", "Bearer "+h.tokens[caller], HeaderSpore, h.tokens[caller])
			answers = append(answers, string(r.body))
			_ = rank
		}
	}
	_, err := h.srv.Pass.Run(context.Background(), reconcile.Options{Deliver: true, Heal: true})
	require.NoError(t, err)
	var all []string
	all = append(all, answers...)
	all = append(all, h.logs.String())
	for id := range h.tokens {
		b, err := json.Marshal(h.events(id))
		require.NoError(t, err)
		all = append(all, string(b))
		for _, p := range h.prompts(id) {
			all = append(all, p.Text, p.From)
		}
	}
	require.Contains(t, h.logs.String(), "route=summons", "the requests were logged")
	for id, tok := range h.tokens {
		for _, s := range all {
			require.NotContains(t, s, tok, "the token of %s leaked", id)
			require.NotContains(t, s, tok[4:], "the token of %s leaked", id)
		}
	}
}

func TestSummonsGoesOneRankUp(t *testing.T) {
	h := newHarness(t)
	h.add(state.Spore{Wish: state.Wish{ID: "arch", Colony: "hq", Rank: state.RankArch}}, true)
	h.add(state.Spore{Wish: state.Wish{ID: "alone", Colony: "empty", Rank: state.RankSpore}}, true)
	h.add(state.Spore{Wish: state.Wish{ID: "lead", Colony: "empty", Rank: state.RankSwarm, Swarm: "s", Role: "lead"}}, true)
	r := h.do("alone", "POST", "/api/mycologist/summons", AskRequest{Text: "anyone?"})
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	var res SendResponse
	r.decode(t, &res)
	require.Equal(t, "arch", res.To, "a colony without its mycologist escalates to the arch")
	require.Equal(t, Delivered, res.State)
	p := h.prompts("arch")
	require.Len(t, p, 1)
	require.Equal(t, "[from spore alone]\nanyone?\n\n(alone summons you. Read its conversation: `mycologist spore alone --turns 5`. Answer it: `mycologist tell alone \"…\"`.)", p[0].Text)

	h2 := newHarness(t)
	h2.add(state.Spore{Wish: state.Wish{ID: "alone", Colony: "empty", Rank: state.RankSpore}}, true)
	r = h2.do("alone", "POST", "/api/mycologist/summons", AskRequest{Text: "anyone?"})
	require.Equal(t, http.StatusConflict, r.status)
	var e Error
	r.decode(t, &e)
	require.Equal(t, CodeNoMycologist, e.Code)
}

func TestSporesList(t *testing.T) {
	h := newHarness(t).colony()
	h.rt.BridgeOf("lab-a").SetState(bridge.StateWorking)
	r := h.do("lab-myco", "GET", "/api/spores", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var l SporeList
	r.decode(t, &l)
	byID := map[string]SporeInfo{}
	for _, s := range l.Spores {
		byID[s.ID] = s
	}
	require.Len(t, byID, 4)
	a := byID["lab-a"]
	require.Equal(t, "Healthy", a.Effective)
	require.Equal(t, "working", a.Activity)
	require.Equal(t, "red", a.Swarm)
	require.Equal(t, "coder", a.Role)
	require.False(t, a.LastEventAt.IsZero())
	require.Equal(t, "Paused", byID["lab-b"].Effective)

	// A mycologist that reaches no one gets an empty list, not the fleet.
	h.add(state.Spore{Wish: state.Wish{ID: "lonely", Colony: "lonely", Rank: state.RankColony}}, true)
	r = h.do("lonely", "GET", "/api/spores", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.JSONEq(t, `{"spores": []}`, string(r.body))
}

func TestSporeTurns(t *testing.T) {
	h := newHarness(t).colony()
	ctx := context.Background()
	now := time.Now().UTC()
	require.NoError(t, h.st.Update(ctx, func(tx state.Tx) error {
		var evs []state.Event
		for i := 1; i <= 5; i++ {
			evs = append(evs, state.Event{Kind: state.KindPrompt, From: "user:alice", At: now, Text: fmt.Sprintf("question %d", i)})
			evs = append(evs, state.Event{Kind: state.KindAgent, At: now, BridgeSeq: uint64(i), Line: json.RawMessage(fmt.Sprintf(`{"type":"assistant","message":{"content":[{"type":"text","text":"answer %d \u001b[31m"}]}}`, i))})
		}
		_, err := tx.Append(ctx, "lab-b", evs)
		return err
	}))
	r := h.do("lab-myco", "GET", "/api/spores/lab-b?turns=2", nil)
	require.Equal(t, http.StatusOK, r.status, "%s", r.body)
	var st SporeTurns
	r.decode(t, &st)
	require.Equal(t, 2, st.Turns)
	require.Equal(t, "Paused", st.Effective, "read while it sleeps")
	require.Contains(t, st.Text, "question 4")
	require.Contains(t, st.Text, "answer 5")
	require.NotContains(t, st.Text, "question 3")
	require.NotContains(t, st.Text, "\x1b", "the text is safe for a terminal")

	r = h.do("lab-myco", "GET", "/api/spores/lab-b", nil)
	r.decode(t, &st)
	require.Equal(t, DefaultTurns, st.Turns)
	r = h.do("lab-myco", "GET", "/api/spores/lab-b?turns=50", nil)
	r.decode(t, &st)
	require.Equal(t, 6, st.Turns, "all there are (the first prompt of the fixture too)")
}

func TestSwarmCompactNeedsAnAwakeTeammate(t *testing.T) {
	h := newHarness(t).colony()
	r := h.do("lab-lead", "POST", "/api/swarm/compact", CompactRequest{Role: "tester"})
	require.Equal(t, http.StatusConflict, r.status)
	var e Error
	r.decode(t, &e)
	require.Equal(t, CodeAsleep, e.Code)

	h.rt.BridgeOf("lab-a").SetUp(false)
	r = h.do("lab-lead", "POST", "/api/swarm/compact", CompactRequest{Role: "coder"})
	require.Equal(t, http.StatusConflict, r.status)
	r.decode(t, &e)
	require.Equal(t, CodeNotUp, e.Code)
	require.Zero(t, h.st.updates.Load())

	h.rt.BridgeOf("lab-a").SetUp(true)
	r = h.do("lab-lead", "POST", "/api/swarm/compact", CompactRequest{Role: "coder"})
	require.Equal(t, http.StatusAccepted, r.status, "%s", r.body)
	evs := h.events("lab-a")
	last := evs[len(evs)-1]
	require.Equal(t, "compact", last.Action)
	require.Equal(t, "spore:lab-lead", last.From)
}

func TestSwarmTellNeedsOneTeammateOfTheRole(t *testing.T) {
	h := newHarness(t).colony()
	h.add(state.Spore{Wish: state.Wish{ID: "lab-b2", Colony: "lab", Rank: state.RankSpore, Swarm: "red", Role: "tester"}}, true)
	r := h.do("lab-a", "POST", "/api/swarm/tell", SwarmTellRequest{Role: "tester", Text: "which of you?"})
	require.Equal(t, http.StatusConflict, r.status)
	var e Error
	r.decode(t, &e)
	require.Equal(t, CodeAmbiguousRole, e.Code)
	r = h.do("lab-a", "POST", "/api/swarm/tell", SwarmTellRequest{Role: "coder", Text: "me?"})
	require.Equal(t, http.StatusNotFound, r.status, "oneself is no teammate")
	r = h.do("lab-c", "POST", "/api/swarm/tell", SwarmTellRequest{Role: "coder", Text: "hi"})
	require.Equal(t, http.StatusForbidden, r.status, "a spore in no swarm")
}

// TestFollowWoken: with a background context, a message that woke its
// target is delivered once the target is up, with no reconcile.
func TestFollowWoken(t *testing.T) {
	h := newHarness(t).colony()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.srv.Background, h.srv.FollowWoken = ctx, 10*time.Second
	h.setDesired("lab-myco", state.Paused)
	r := h.do("lab-a", "POST", "/api/mycologist/summons", AskRequest{Text: "help"})
	require.Equal(t, http.StatusAccepted, r.status)
	var res SendResponse
	r.decode(t, &res)
	require.True(t, res.Woke, "the summons woke it")
	require.Eventually(t, func() bool { return len(h.prompts("lab-myco")) == 1 }, 10*time.Second, 20*time.Millisecond)
	cancel()
	h.srv.Wait()
	require.Len(t, h.prompts("lab-myco"), 1)

	// Delivered by another pass first: the follower stops at once, not
	// when its time is up. lab-b is one idle put to sleep in a colony that
	// wakes on a message, so a swarm tell wakes it.
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	h.srv.Background = ctx2
	require.NoError(t, h.st.Store.Update(context.Background(), func(tx state.Tx) error {
		if _, err := wish.SetColony(context.Background(), tx, "lab", state.ColonySettings{WakeOnMessage: true}); err != nil {
			return err
		}
		if err := wish.Wake(context.Background(), tx, "lab-b", time.Now()); err != nil {
			return err
		}
		_, _, err := wish.SleepBy(context.Background(), tx, "lab-b", state.ByIdle, ": idle for 1h0m0s", time.Now())
		return err
	}))
	r = h.do("lab-a", "POST", "/api/swarm/tell", SwarmTellRequest{Role: "tester", Text: "your turn"})
	require.Equal(t, http.StatusAccepted, r.status)
	_, err := h.srv.Pass.Run(context.Background(), reconcile.Options{IDs: []string{"lab-b"}, Deliver: true})
	require.NoError(t, err)
	start := time.Now()
	h.srv.Wait()
	require.Less(t, time.Since(start), 3*time.Second)
	require.Len(t, h.prompts("lab-b"), 1)
}

func TestHealthz(t *testing.T) {
	h := newHarness(t)
	r := h.do("", "GET", "/healthz", nil)
	require.Equal(t, http.StatusOK, r.status)
	require.JSONEq(t, `{"ok": true}`, string(r.body))
	h.srv.Store = brokenStore{h.st}
	r = h.do("", "GET", "/healthz", nil)
	require.Equal(t, http.StatusServiceUnavailable, r.status)
	require.JSONEq(t, `{"error": "the store is not readable", "code": "unavailable"}`, string(r.body))
}

// brokenStore cannot be read.
type brokenStore struct{ state.Store }

func (brokenStore) View(context.Context, func(state.Tx) error) error {
	return &state.UnavailableError{Op: "read the store", Err: errors.New("disk on fire")}
}

// TestAStoppedSporeIsNotWoken: stopped is "off until a person says
// otherwise"; no message from a spore wakes it, wake or not.
func TestAStoppedSporeIsNotWoken(t *testing.T) {
	h := newHarness(t).colony()
	ctx := context.Background()
	for _, id := range []string{"lab-myco", "lab-b"} {
		require.NoError(t, h.st.Store.Update(ctx, func(tx state.Tx) error {
			sp, err := tx.Spore(ctx, id)
			if err != nil {
				return err
			}
			sp.Desired = state.Stopped
			_, err = storetest.Put(ctx, tx, sp)
			return err
		}))
	}
	h.st.updates.Store(0)
	for _, c := range []struct {
		caller, path string
		body         any
	}{
		{"lab-a", "/api/mycologist/summons", AskRequest{Text: "help"}},
		{"lab-a", "/api/swarm/tell", SwarmTellRequest{Role: "tester", Text: "your turn"}},
		{"arch", "/spores/lab-b/prompt", TellRequest{Text: "up!", Wake: true}},
	} {
		r := h.do(c.caller, "POST", c.path, c.body)
		require.Equal(t, http.StatusConflict, r.status, "%s: %s", c.path, r.body)
		var e Error
		r.decode(t, &e)
		require.Equal(t, CodeStopped, e.Code)
	}
	require.Empty(t, h.messages("lab-myco"))
	require.Empty(t, h.messages("lab-b"))
	require.Equal(t, state.Stopped, h.spore("lab-b").Desired)
}

// TestRateLimitHoldsAcrossServers: the limit is counted from the store,
// so two servers of one store share it; a retry is not counted; the
// refusal says when to try again and writes nothing.
func TestRateLimitHoldsAcrossServers(t *testing.T) {
	h := newHarness(t).colony()
	h.srv.RateLimit = 3
	other := &Server{Store: h.st, Pass: h.srv.Pass, RateLimit: 3}
	ts2 := httptest.NewServer(other)
	defer ts2.Close()
	ask := func(base, reqID string) response {
		t.Helper()
		h.ts.URL, base = base, h.ts.URL
		defer func() { h.ts.URL = base }()
		return h.do("lab-a", "POST", "/api/swarm/tell", SwarmTellRequest{Role: "lead", Text: "done " + reqID}, HeaderRequestID, reqID)
	}
	one := h.ts.URL
	require.Equal(t, http.StatusAccepted, ask(one, "r-1").status)
	require.Equal(t, http.StatusAccepted, ask(ts2.URL, "r-2").status)
	require.Equal(t, http.StatusAccepted, ask(ts2.URL, "r-2").status, "a retry is not counted")
	require.Equal(t, http.StatusAccepted, ask(one, "r-3").status)
	before := len(h.events("lab-a"))
	for _, base := range []string{one, ts2.URL} {
		r := ask(base, "r-4")
		require.Equal(t, http.StatusTooManyRequests, r.status, "%s", r.body)
		var e Error
		r.decode(t, &e)
		require.Equal(t, CodeRateLimited, e.Code)
		ra, err := strconv.Atoi(r.header.Get("Retry-After"))
		require.NoError(t, err)
		require.True(t, ra >= 1 && ra <= 60, "Retry-After %d", ra)
	}
	require.Len(t, h.messages("lab-lead"), 3)
	require.Len(t, h.events("lab-a"), before, "a refusal writes nothing")
	// The sender's log says what it sent.
	var sent int
	for _, ev := range h.events("lab-a") {
		if ev.Action == "sent" {
			sent++
			require.Contains(t, ev.Text, "to lab-lead")
		}
	}
	require.Equal(t, 3, sent)
	// Another spore has its own count.
	h.setDesired("lab-b", state.Running)
	r := h.do("lab-b", "POST", "/api/swarm/tell", SwarmTellRequest{Role: "lead", Text: "me too"})
	require.Equal(t, http.StatusAccepted, r.status)
}
