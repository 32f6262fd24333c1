package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/sporeenv"
	"github.com/sporectl/sporectl/mycelia"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
)

// apiColony is a fake colony (reconciletest's runtime) with serve's API
// over its store on httptest, and a known token for every spore.
type apiColony struct {
	*fakeColony
	st     state.Store
	url    string
	tokens map[string]string
}

// compactBridge adds the bridge's compact to a fake bridge.
type compactBridge struct{ *reconciletest.Bridge }

func (b compactBridge) Compact(ctx context.Context) (bridge.PromptAccepted, error) {
	return b.Prompt(ctx, bridge.PromptRequest{ID: "compact-" + time.Now().Format(time.RFC3339Nano), From: "bridge:compact", Text: "/compact"})
}

func newAPIColony(t *testing.T) *apiColony {
	t.Helper()
	c := &apiColony{fakeColony: newFakeColony(t), tokens: map[string]string{}}
	c.ok("create", "myco", "--rank", "colony", "--colony", "lab")
	c.ok("create", "a", "--colony", "lab", "--swarm", "red", "--role", "coder", "--wake")
	c.ok("create", "b", "--colony", "lab", "--swarm", "red", "--role", "tester")
	c.ok("create", "lead", "--colony", "lab", "--rank", "swarm", "--swarm", "red", "--role", "lead", "--wake")
	c.ok("create", "x", "--colony", "far", "--wake")
	st, err := dirstore.Open(context.Background(), c.store, dirstore.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	c.st = st
	for _, id := range []string{"myco", "a", "b", "lead", "x"} {
		c.newToken(id)
	}
	dial := func(ep reconcile.BridgeEndpoint) (reconcile.BridgeClient, error) {
		b, err := c.rt.Dial(ep)
		if err != nil {
			return nil, err
		}
		return compactBridge{b.(*reconciletest.Bridge)}, nil
	}
	srv := &mycelia.Server{Store: st, Pass: reconciletest.NewPass(t, st,
		reconciletest.WithRuntime(hostsRuntime{c.rt}), reconciletest.WithDial(dial), reconciletest.RealClock())}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	c.url = ts.URL
	return c
}

// newToken gives id a token the test knows (a start issues a new one).
func (c *apiColony) newToken(id string) {
	c.t.Helper()
	tok, hash, err := state.NewToken()
	require.NoError(c.t, err)
	c.tokens[id] = tok
	require.NoError(c.t, c.st.Update(context.Background(), func(tx state.Tx) error { return tx.SetTokenHash(context.Background(), id, hash) }))
}

// as runs a command line inside spore id: its environment is the one
// docs/mycologists.md documents.
func (c *apiColony) as(id string, env map[string]string, args ...string) result {
	c.t.Helper()
	var out, errb bytes.Buffer
	f := NewFactory(IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errb})
	f.Now = func() time.Time { return c.now }
	vars := map[string]string{sporeenv.APIURL: c.url, sporeenv.SporeID: id, sporeenv.APIToken: c.tokens[id]}
	for k, v := range env {
		vars[k] = v
	}
	f.Getenv = func(k string) string { return vars[k] }
	code := RunWith(context.Background(), f, args)
	return result{out.String(), errb.String(), code}
}

func (c *apiColony) asOK(id string, args ...string) string {
	c.t.Helper()
	r := c.as(id, nil, args...)
	require.Equal(c.t, 0, r.code, "%s: %s: %s", id, strings.Join(args, " "), r.err)
	return r.out
}

func TestMycologistCommands(t *testing.T) {
	c := newAPIColony(t)
	c.ok("prompt", "a", "hello a")

	out := c.asOK("a", "mycologist", "ask", "my tests fail, please look")
	require.Regexp(t, `^message/m-[0-9a-f]{24} waiting in the outbox of spore/myco: .* \(woken\)\n$`, out)
	c.newToken("myco") // its start issued it one of its own
	c.ok("reconcile")
	p := c.rt.BridgeOf("myco").Prompts()
	require.Len(t, p, 1)
	require.True(t, strings.HasPrefix(p[0].Text, "[from spore a]\nmy tests fail, please look"), p[0].Text)
	require.Regexp(t, `> \[spore:a\] \[from spore a\]\n +my tests fail`, c.ok("chat", "myco"))

	var list mycelia.SporeList
	require.NoError(t, json.Unmarshal([]byte(c.asOK("myco", "mycologist", "spores", "-o", "json")), &list))
	var ids []string
	for _, s := range list.Spores {
		ids = append(ids, s.ID)
	}
	require.Equal(t, []string{"a", "b", "lead"}, ids, "its colony, below it; not x of colony far")
	table := c.asOK("myco", "mycologist", "spores")
	require.Contains(t, table, "EFFECTIVE")
	require.Regexp(t, `(?m)^a\s+lab\s+spore\s+red\s+coder\s+Running\s+Healthy\s+idle\s+`, table)

	text := c.asOK("myco", "mycologist", "spore", "a", "--turns", "2")
	require.Contains(t, text, "# spore/a, Healthy (Running)")
	require.Contains(t, text, "[user:alice] hello a")
	require.Contains(t, text, "echo: hello a")

	r := c.as("myco", nil, "mycologist", "tell", "b", "are you there?")
	require.Equal(t, ExitAsleep, r.code, r.err)
	require.Contains(t, r.err, "spore b is asleep")
	out = c.asOK("myco", "mycologist", "tell", "b", "are you there?", "--wake")
	require.Contains(t, out, "(woken)")
	out = c.asOK("myco", "mycologist", "tell", "a", "keep going", "-o", "name")
	require.Regexp(t, `^message/m-[0-9a-f]{24}\n$`, out)

	for _, tc := range []struct {
		who  string
		args []string
		code int
		msg  string
	}{
		{"a", []string{"mycologist", "tell", "b", "do this"}, ExitForbidden, "may not call"},
		{"a", []string{"mycologist", "spores"}, ExitForbidden, "may not call"},
		{"myco", []string{"mycologist", "tell", "x", "hi"}, ExitForbidden, "spore x is not in your reach"},
		{"myco", []string{"mycologist", "tell", "ghost", "hi"}, ExitForbidden, "spore ghost is not in your reach"},
		{"myco", []string{"mycologist", "spore", "x"}, ExitForbidden, "not in your reach"},
		{"myco", []string{"mycologist", "spore", "a", "--turns", "0"}, ExitUsage, "--turns"},
		{"myco", []string{"mycologist", "tell", "a", " "}, ExitUsage, "the text is empty"},
		{"myco", []string{"mycologist", "tell", "a", "hi \x1b[2J"}, ExitUsage, "the text holds the control character U+001B at byte 3"},
		{"a", []string{"swarm", "tell", "coder", "a\rb"}, ExitUsage, "U+000D"},
		{"myco", []string{"mycologist", "tell", "A", "hi"}, ExitUsage, "invalid spore id"},
		{"a", []string{"swarm", "compact", "tester"}, ExitForbidden, "may not call"},
		{"a", []string{"swarm", "tell", "scout", "hi"}, ExitNotFound, "no other spore with role scout"},
		{"x", []string{"swarm", "tell", "coder", "hi"}, ExitForbidden, "in no swarm"},
	} {
		r := c.as(tc.who, nil, tc.args...)
		require.Equal(t, tc.code, r.code, "%s %v: %s", tc.who, tc.args, r.err)
		require.Contains(t, r.err, tc.msg)
		require.Empty(t, r.out)
	}

	out = c.asOK("a", "swarm", "tell", "tester", "your turn")
	require.Contains(t, out, "spore/b")
	c.ok("reconcile")
	last := c.rt.BridgeOf("b").Prompts()
	require.Equal(t, "[from swarm teammate coder]\nyour turn\n\n(Answer it: `swarm tell coder \"…\"`.)", last[len(last)-1].Text)
	out = c.asOK("lead", "swarm", "compact", "coder")
	require.Regexp(t, `^compact/compact-\S+ queued at position 0 by spore/a\n$`, out)
}

func TestClientExitCodes(t *testing.T) {
	c := newAPIColony(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := "http://" + ln.Addr().String()
	ln.Close()
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		code int
		msg  string
	}{
		{"wrong token", map[string]string{sporeenv.APIToken: "spt_wrong"}, []string{"mycologist", "ask", "hi"}, ExitUnauthorized, "401 Unauthorized"},
		{"another's token", map[string]string{sporeenv.APIToken: c.tokens["myco"]}, []string{"mycologist", "ask", "hi"}, ExitUnauthorized, "401"},
		{"no serve", map[string]string{sporeenv.APIURL: closed}, []string{"mycologist", "ask", "hi", "--retry-for", "0"}, ExitAPI, "could not be reached"},
		{"no url", map[string]string{sporeenv.APIURL: ""}, []string{"mycologist", "ask", "hi"}, ExitUsage, "SPORECTL_API_URL is not set"},
		{"no token", map[string]string{sporeenv.APIToken: "", "HOME": t.TempDir()}, []string{"swarm", "tell", "tester", "hi"}, ExitUsage, "no API token"},
		{"bad url", map[string]string{sporeenv.APIURL: "unix:///x"}, []string{"mycologist", "spores"}, ExitUsage, "want http(s)://host:port"},
	} {
		r := c.as("a", tc.env, tc.args...)
		require.Equal(t, tc.code, r.code, "%s: %s", tc.name, r.err)
		require.Contains(t, r.err, tc.msg, tc.name)
		for _, tok := range c.tokens {
			require.NotContains(t, r.err+r.out, tok, "%s: a token was printed", tc.name)
		}
	}
	require.Empty(t, c.rt.BridgeOf("myco").Prompts())
}

func TestProgramArgs(t *testing.T) {
	for _, tc := range []struct{ argv, want []string }{
		{[]string{"/usr/bin/sporectl", "status"}, []string{"status"}},
		{[]string{"sporectl"}, []string{}},
		{[]string{"/usr/local/bin/mycologist", "ask", "hi"}, []string{"mycologist", "ask", "hi"}},
		{[]string{"swarm", "tell", "lead", "done"}, []string{"swarm", "tell", "lead", "done"}},
		{[]string{"./mycologist-old", "ask"}, []string{"ask"}},
		{nil, nil},
	} {
		require.Equal(t, tc.want, programArgs(tc.argv), "%v", tc.argv)
	}
}

func TestMycologistAddressCollisionsDeploys(t *testing.T) {
	c := newAPIColony(t)
	// A sleeping spore may not call serve: its mycologist is woken first.
	r := c.as("myco", nil, "mycologist", "spores")
	require.Equal(t, ExitForbidden, r.code, r.err)
	require.Contains(t, r.err, "spore myco is asleep (desired Paused)")
	c.ok("wake", "myco")
	c.newToken("myco") // its start issued it one of its own
	// The fallback check (serve without a key): a tell naming another
	// spore in reach and not its target is refused, exit 5, naming it.
	r = c.as("myco", nil, "mycologist", "tell", "a", "b: rerun the suite")
	require.Equal(t, ExitConflict, r.code, r.err)
	require.Contains(t, r.err, "meant for spore b, not a")
	require.Contains(t, r.err, "--force")
	out := c.asOK("myco", "mycologist", "tell", "a", "b: rerun the suite", "--force", "-o", "json")
	var sent mycelia.SendResponse
	require.NoError(t, json.Unmarshal([]byte(out), &sent))
	require.Equal(t, "forced", sent.AddressCheck)

	// Edits and pushes, ingested into the store.
	ctx := context.Background()
	line := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	use := func(id, name string, in map[string]string) json.RawMessage {
		return line(map[string]any{"type": "assistant", "message": map[string]any{"content": []any{map[string]any{"type": "tool_use", "id": id, "name": name, "input": in}}}})
	}
	for _, id := range []string{"a", "b", "x"} {
		require.NoError(t, c.st.Update(ctx, func(tx state.Tx) error {
			_, err := tx.Append(ctx, id, []state.Event{
				{Kind: state.KindAgent, Line: use("e-"+id, "Edit", map[string]string{"file_path": "/w/main.go"})},
				{Kind: state.KindAgent, Line: use("p-"+id, "Bash", map[string]string{"command": "git push origin HEAD"})},
			})
			return err
		}))
	}
	out = c.asOK("myco", "mycologist", "collisions")
	require.Regexp(t, `(?m)^FILE\s+SPORE\s+EDITS\s+FIRST\s+LAST$`, out)
	require.Regexp(t, `(?m)^/w/main.go\s+a\s+1\s+`, out)
	require.Regexp(t, `(?m)^/w/main.go\s+b\s+1\s+`, out)
	require.NotContains(t, out, " x ", "x is of colony far")

	out = c.asOK("a", "mycologist", "report", "deploy", "--failed", "helm upgrade web: timeout")
	require.Regexp(t, `^report/report-deploy-failed recorded in the log of spore/a \(event \d+\)\n$`, out)
	out = c.asOK("myco", "mycologist", "deploys", "--window", "2h")
	require.Regexp(t, `(?m)^\S+\s+a\s+push\s+ok\s+tool\s+git push origin HEAD$`, out)
	require.Regexp(t, `(?m)^\S+\s+a\s+deploy\s+FAILED\s+report\s+helm upgrade web: timeout$`, out)
	require.NotContains(t, out, " x ")

	for _, tc := range []struct {
		who  string
		args []string
		code int
		msg  string
	}{
		{"a", []string{"mycologist", "collisions"}, ExitForbidden, "may not call"},
		{"a", []string{"mycologist", "deploys"}, ExitForbidden, "may not call"},
		{"myco", []string{"mycologist", "deploys", "--window", "0s"}, ExitUsage, "--window"},
		{"myco", []string{"mycologist", "collisions", "--window", "1000h"}, ExitUsage, "--window"},
		{"a", []string{"mycologist", "report", "release", "x"}, ExitUsage, "push or deploy"},
		{"a", []string{"mycologist", "report", "push"}, ExitUsage, "push or deploy"},
	} {
		r := c.as(tc.who, nil, tc.args...)
		require.Equal(t, tc.code, r.code, "%s %v: %s", tc.who, tc.args, r.err)
		require.Contains(t, r.err, tc.msg)
		require.Empty(t, r.out)
	}
}

// TestEveryRouteHasItsCommand: the in-pod commands are the API's rows
// (mycelia.Routes): each row with a command has it, with the row's usage
// and help, and every mycologist/swarm command is a row's.
func TestEveryRouteHasItsCommand(t *testing.T) {
	root := NewRootCmd(NewFactory(IOStreams{}))
	rows := map[string]*mycelia.Route{}
	for _, rt := range mycelia.Routes {
		if rt.Command == "" {
			continue
		}
		rows[rt.Command] = rt
		cmd, rest, err := root.Find(strings.Fields(rt.Command))
		require.NoError(t, err, rt.Command)
		require.Empty(t, rest)
		require.Equal(t, rt.Command, strings.TrimPrefix(cmd.CommandPath(), root.Name()+" "))
		require.Equal(t, rt.Use(), cmd.Use)
		require.Equal(t, rt.Short, cmd.Short)
		require.Equal(t, rt.Long, cmd.Long)
	}
	for _, group := range []string{"mycologist", "swarm"} {
		g, _, err := root.Find([]string{group})
		require.NoError(t, err)
		for _, c := range g.Commands() {
			if c.Name() == "help" {
				continue
			}
			require.Contains(t, rows, group+" "+c.Name(), "command %s %s is no route's", group, c.Name())
		}
	}
}
