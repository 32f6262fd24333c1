package mycelia

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge/fakeapi"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

const testKey = "sk-ant-test-0123456789abcdef-SECRET"

// modelAPI is the project's fake Messages API behind a recorder of each
// request's headers and raw body (the fake keeps neither the headers nor
// the system prompt).
type modelAPI struct {
	fake *fakeapi.Server
	ts   *httptest.Server
	mu   sync.Mutex
	hdrs []http.Header
	raws []map[string]any
}

func newModelAPI(t *testing.T) *modelAPI {
	m := &modelAPI{fake: fakeapi.New()}
	m.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var raw map[string]any
		_ = json.Unmarshal(b, &raw)
		m.mu.Lock()
		m.hdrs, m.raws = append(m.hdrs, r.Header.Clone()), append(m.raws, raw)
		m.mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		m.fake.ServeHTTP(w, r)
	}))
	t.Cleanup(m.ts.Close)
	return m
}

func (m *modelAPI) calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.hdrs)
}

// withModel makes h's server check addresses with the fake model.
func (h *harness) withModel(m *modelAPI, timeout time.Duration) *harness {
	h.srv.AddressCheck = &ModelCheck{Key: testKey, Model: "claude-haiku-test", BaseURL: m.ts.URL, Timeout: timeout}
	return h
}

func tellAs(h *harness, to, text string, extra map[string]any) response {
	body := map[string]any{"text": text}
	for k, v := range extra {
		body[k] = v
	}
	return h.do("lab-myco", http.MethodPost, "/spores/"+to+"/prompt", body)
}

func requireRefused(t *testing.T, h *harness, r response, meantFor string) {
	t.Helper()
	require.Equal(t, http.StatusConflict, r.status, "answer: %s", r.body)
	var e Error
	r.decode(t, &e)
	require.Equal(t, CodeMisaddressed, e.Code)
	require.Equal(t, meantFor, e.MeantFor)
	if meantFor != "" {
		require.Contains(t, e.Message, "meant for spore "+meantFor)
	}
	require.Zero(t, h.st.updates.Load(), "a refused tell wrote to the store")
	for id := range h.tokens {
		require.Empty(t, h.messages(id))
	}
}

func requireSent(t *testing.T, h *harness, r response, checked string) {
	t.Helper()
	require.Equal(t, http.StatusAccepted, r.status, "answer: %s", r.body)
	var res SendResponse
	r.decode(t, &res)
	require.Equal(t, checked, res.AddressCheck)
	require.Len(t, h.messages(res.To), 1)
}

func TestAddressCheckModelRequestShapeAndYes(t *testing.T) {
	m := newModelAPI(t)
	m.fake.Script(fakeapi.Rule{Match: "rebase on main", Steps: []fakeapi.Reply{fakeapi.Text("yes")}})
	h := newHarness(t).colony().withModel(m, 2*time.Second)
	requireSent(t, h, tellAs(h, "lab-a", "please rebase on main", nil), "model")

	require.Equal(t, 1, m.calls())
	hdr, raw := m.hdrs[0], m.raws[0]
	require.Equal(t, testKey, hdr.Get("x-api-key"))
	require.Equal(t, AnthropicVersion, hdr.Get("anthropic-version"))
	require.Equal(t, "application/json", hdr.Get("content-type"))
	require.Empty(t, hdr.Get("Authorization"))
	require.Equal(t, "claude-haiku-test", raw["model"])
	require.EqualValues(t, addressMaxTokens, raw["max_tokens"])
	require.Contains(t, raw["system"], "yes")
	req := m.fake.Requests()[0]
	require.Len(t, req.Messages, 1)
	prompt := req.Messages[0].Text()
	for _, want := range []string{"id: lab-a", "rank: spore", "colony: lab", "swarm: red", "role: coder",
		"hello lab-a", "please rebase on main", "lab-c (rank spore", "lab-b (rank spore"} {
		require.Contains(t, prompt, want)
	}
	require.NotContains(t, prompt, "far-x", "the model is told only of spores in the sender's reach")
	require.NotContains(t, h.logs.String(), testKey)
}

func TestAddressCheckModelNo(t *testing.T) {
	m := newModelAPI(t)
	m.fake.Script(
		fakeapi.Rule{Match: "your flaky test", Steps: []fakeapi.Reply{fakeapi.Text(" no: lab-c\n")}},
		fakeapi.Rule{Match: "someone", Steps: []fakeapi.Reply{fakeapi.Text("No: unknown")}},
	)
	h := newHarness(t).colony().withModel(m, 2*time.Second)
	requireRefused(t, h, tellAs(h, "lab-a", "your flaky test is fixed", nil), "lab-c")
	r := tellAs(h, "lab-a", "someone else's job", nil)
	requireRefused(t, h, r, "")
	require.NotContains(t, string(r.body), testKey)

	// --force skips the check: the model is not asked.
	n := m.calls()
	requireSent(t, h, tellAs(h, "lab-a", "your flaky test is fixed", map[string]any{"force": true}), "forced")
	require.Equal(t, n, m.calls())
}

// A model that cannot answer (a timeout, a 5xx, a reply out of the
// contract, a spore it may not name) leaves the decision to the
// fallback: fail open to the deterministic check, never to "accept all"
// nor "refuse all".
func TestAddressCheckModelFailsOpenToTheFallback(t *testing.T) {
	for name, reply := range map[string]fakeapi.Reply{
		"timeout":      fakeapi.Slow(time.Minute, "yes"),
		"5xx":          fakeapi.Error(http.StatusInternalServerError),
		"overloaded":   fakeapi.Error(529),
		"chatty":       fakeapi.Text("Yes, I think this is meant for lab-a."),
		"out of reach": fakeapi.Text("no: far-x"),
	} {
		t.Run(name, func(t *testing.T) {
			m := newModelAPI(t)
			m.fake.Script(fakeapi.Rule{Match: "hi", Steps: []fakeapi.Reply{reply, reply}})
			h := newHarness(t).colony().withModel(m, 200*time.Millisecond)
			start := time.Now()
			// The fallback refuses one that names another spore in reach …
			requireRefused(t, h, tellAs(h, "lab-a", "hi lab-c, your build is green", nil), "lab-c")
			// Well under the slow model's minute: the check's 200ms deadline
			// cut it, with room for a loaded machine.
			require.Less(t, time.Since(start), 20*time.Second)
			// … and accepts one that does not.
			r := tellAs(h, "lab-a", "hi, how is it going?", nil)
			require.Equal(t, http.StatusAccepted, r.status, "answer: %s", r.body)
			var res SendResponse
			r.decode(t, &res)
			require.True(t, strings.HasPrefix(res.AddressCheck, "fallback (model: "), res.AddressCheck)
			require.Equal(t, 2, m.calls())
			require.Contains(t, h.logs.String(), "address check failed")
			require.NotContains(t, h.logs.String(), testKey)
			require.NotContains(t, string(r.body), testKey)
		})
	}
}

func TestAddressCheckFallback(t *testing.T) {
	h := newHarness(t).colony() // no AddressCheck: NameCheck
	requireRefused(t, h, tellAs(h, "lab-a", "lab-b: the tester should rerun", nil), "lab-b")
	// far-x is not in lab-myco's reach: never named, never refused for.
	requireSent(t, h, tellAs(h, "lab-a", "far-x is someone else's", nil), "fallback")
	// Naming the target too is fine.
	requireSent(t, h, tellAs(h, "lab-c", "lab-c: pair with lab-a on this", nil), "fallback")
	// A retry of a recorded message is not checked again.
	r1 := h.do("lab-myco", http.MethodPost, "/spores/lab-a/prompt", map[string]any{"text": "ping lab-b", "force": true}, HeaderRequestID, "same-1")
	require.Equal(t, http.StatusAccepted, r1.status)
	r2 := h.do("lab-myco", http.MethodPost, "/spores/lab-a/prompt", map[string]any{"text": "ping lab-b"}, HeaderRequestID, "same-1")
	require.Equal(t, http.StatusAccepted, r2.status, "answer: %s", r2.body)
	var res SendResponse
	r2.decode(t, &res)
	require.True(t, res.Duplicate)
	require.Equal(t, "retry", res.AddressCheck)
}

// TestAddressCheckSharesItsRead: the tells of one SporesShare name their
// candidates from one read of the records; a spore created after that
// read is no candidate until the next one; with SporesShare < 0 each tell
// reads them itself.
func TestAddressCheckSharesItsRead(t *testing.T) {
	h := newHarness(t).colony()
	h.srv.SporesShare = time.Hour
	c := &statetest.Reads{Store: h.st}
	h.srv.Store, h.srv.Pass.Store = c, c
	requireSent(t, h, tellAs(h, "lab-a", "first", nil), "fallback")
	c.TakeCalls()
	requireSent(t, h, tellAs(h, "lab-c", "second", nil), "fallback")
	require.Zero(t, c.TakeCalls()["Spores"], "the second tell reads no records")

	h.add(state.Spore{Wish: state.Wish{ID: "lab-new", Colony: "lab", Rank: state.RankSpore}}, true)
	requireSent(t, h, tellAs(h, "lab-lead", "lab-new: this one is yours", nil), "fallback")

	// Each its own: a fresh server, where the new spore is a candidate.
	h = newHarness(t).colony()
	h.srv.SporesShare = -1
	h.add(state.Spore{Wish: state.Wish{ID: "lab-new", Colony: "lab", Rank: state.RankSpore}}, true)
	h.st.updates.Store(0)
	c = &statetest.Reads{Store: h.st}
	h.srv.Store, h.srv.Pass.Store = c, c
	requireRefused(t, h, tellAs(h, "lab-a", "lab-new: this one is yours", nil), "lab-new")
	requireRefused(t, h, tellAs(h, "lab-a", "lab-new: this one is yours", nil), "lab-new")
	require.Equal(t, 2, c.TakeCalls()["Spores"], "each tell reads the records once")
}

func TestNameCheck(t *testing.T) {
	cands := []Candidate{{ID: "lab-b"}, {ID: "lab-c"}, {ID: "web"}}
	for text, want := range map[string]string{
		"hello":                   "",
		"LAB-B please":            "lab-b",
		"lab-bee is not lab-b-x":  "",
		"see web and lab-c":       "web",
		"for lab-a, not lab-b":    "",
		"the website is down":     "",
		"(lab-c) and then lab-b.": "lab-c",
	} {
		v, err := NameCheck{}.CheckAddress(context.Background(), AddressQuery{Target: state.Spore{Wish: state.Wish{ID: "lab-a"}}, Candidates: cands, Text: text})
		require.NoError(t, err)
		require.Equal(t, want != "", v.Misaddressed, text)
		require.Equal(t, want, v.MeantFor, text)
	}
}

func TestNewAddressCheck(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	c, what, err := NewAddressCheck(getenv, "auto", "", time.Second)
	require.NoError(t, err)
	require.IsType(t, NameCheck{}, c)
	require.Contains(t, what, "ANTHROPIC_API_KEY is not set")
	env[EnvAnthropicKey], env[EnvAddressModel] = testKey, "claude-x"
	c, what, err = NewAddressCheck(getenv, "auto", "", time.Second)
	require.NoError(t, err)
	require.Equal(t, "claude-x", c.(*ModelCheck).Model)
	require.NotContains(t, what, testKey)
	c, _, err = NewAddressCheck(getenv, "auto", "claude-y", time.Second)
	require.NoError(t, err)
	require.Equal(t, "claude-y", c.(*ModelCheck).Model)
	c, _, err = NewAddressCheck(getenv, "fallback", "", time.Second)
	require.NoError(t, err)
	require.IsType(t, NameCheck{}, c)
	_, _, err = NewAddressCheck(getenv, "nope", "", time.Second)
	require.Error(t, err)
}

// TestWordIndex: an id counts only as a whole word, the first such
// occurrence wins, and partial or longer ids never match.
func TestWordIndex(t *testing.T) {
	for _, c := range []struct {
		text, id string
		want     int
	}{
		{"lab-a", "lab-a", 0},
		{"ask lab-a now", "lab-a", 4},
		{"lab-ab and lab-a.", "lab-a", 11},
		{"xlab-a lab-a-2", "lab-a", -1},
		{"(lab-a)", "lab-a", 1},
		{"lab-", "lab-a", -1},
		{"", "lab-a", -1},
		{"lab-a", "", -1},
		{"lab-alab-a", "lab-a", -1},
	} {
		require.Equal(t, c.want, wordIndex(c.text, c.id), "%q in %q", c.id, c.text)
	}
}
