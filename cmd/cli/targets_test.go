package cli

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

func TestSporeRef(t *testing.T) {
	for in, want := range map[string]string{"w-1": "w-1", "spore/w-1": "w-1"} {
		got, err := sporeRef(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for in, says := range map[string]string{
		"deployment/w-1":                   `"deployment/w-1": sporectl names spores (spore/NAME)`,
		"spores/w-1":                       `"spores/w-1": sporectl names spores`,
		"Spore/w-1":                        `sporectl names spores`,
		"/w-1":                             `sporectl names spores`,
		"spore/":                           "must not be empty",
		"spore/Bad!":                       "spore id",
		"spore/a/b":                        "spore id",
		strings.Repeat("x", 1<<20) + "/w1": "bytes)",
	} {
		_, err := sporeRef(in)
		require.Error(t, err, in[:min(len(in), 20)])
		assert.Contains(t, err.Error(), says)
		assert.Less(t, len(err.Error()), 400, "a long argument is quoted bounded")
		assert.Equal(t, ExitUsage, exitCode(err), "%s: a bad id is a usage error", in[:min(len(in), 20)])
	}
}

// idUseFillers are the arguments that follow the spore id in a command's
// Use line, by their token: a command with a token not here fails
// TestEverySporeIDCommandTakesTypeSlashName until one is added.
var idUseFillers = map[string][]string{
	"TEXT|-":   {"hello"},
	"MSG":      {"m-1"},
	"DURATION": {"1h"},
	"[ID...]":  nil,
	"|":        nil, // outbox ID | outbox drop ID MSG: the group's own form ends here
	// set budget ID... (--tokens N | --cost USD | --clear): one limit named
	// is enough; the rest of the alternatives add nothing.
	"(--tokens": nil, // flags: not positional arguments
	"N":         nil,
	"--cost":    nil,
	"USD":       nil,
}

// TestEverySporeIDCommandTakesTypeSlashName walks the command tree: every
// command whose Use line starts with a spore id takes spore/NAME (and
// hands its run the bare id) and refuses another TYPE/ with exit 2
// naming it. No hand list of commands: a new one is covered as it is
// added.
func TestEverySporeIDCommandTakesTypeSlashName(t *testing.T) {
	var found []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			walk(s)
		}
		fields := strings.Fields(c.Use)
		if len(fields) < 2 || c.Args == nil {
			return
		}
		first := strings.Trim(fields[1], "[(")
		if first != "ID" && first != "ID..." {
			return
		}
		found = append(found, c.CommandPath())
		var rest []string
		for _, tok := range fields[2:] {
			if tok == "|" {
				break
			}
			if strings.HasPrefix(tok, "[-") || strings.HasPrefix(tok, "-") || strings.HasSuffix(tok, "]") && strings.HasPrefix(tok, "[--") {
				continue
			}
			if _, ok := idUseFillers[tok]; !ok && !strings.HasPrefix(tok, "[") && !strings.HasSuffix(tok, ")") && !strings.HasSuffix(tok, "]") && tok != "SELECTOR" {
				t.Errorf("%s: Use token %q has no filler in idUseFillers", c.CommandPath(), tok)
				return
			}
			rest = append(rest, idUseFillers[tok]...)
		}
		ids := []string{"spore/w-1"}
		if first == "ID..." {
			ids = append(ids, "w-2", "spore/w-3")
		}
		args := append(append([]string{}, ids...), rest...)
		require.NoError(t, c.Args(c, args), "%s %v", c.CommandPath(), args)
		assert.Equal(t, "w-1", args[0], "%s hands its run the bare id", c.CommandPath())
		if first == "ID..." {
			assert.Equal(t, []string{"w-1", "w-2", "w-3"}, args[:3], c.CommandPath())
		}

		bad := append([]string{"deployment/w-1"}, rest...)
		err := c.Args(c, bad)
		require.Error(t, err, c.CommandPath())
		assert.Equal(t, ExitUsage, exitCode(err), c.CommandPath())
		assert.Contains(t, err.Error(), `"deployment/w-1": sporectl names spores (spore/NAME)`, c.CommandPath())
	}
	walk(NewRootCmd(NewFactory(IOStreams{In: strings.NewReader("")})))
	// The walk must find the commands it is about, or it proves nothing.
	for _, want := range []string{"sporectl wake", "sporectl delete", "sporectl status", "sporectl events", "sporectl prompt", "sporectl set budget", "sporectl set sleep-after", "sporectl outbox", "sporectl outbox drop", "sporectl mycologist tell", "sporectl token rotate", "sporectl reset"} {
		assert.Contains(t, found, want)
	}
}

// selectRig is a colony on the fake runtime with spores in two colonies,
// a swarm and pod labels.
func selectRig(t *testing.T) *fakeColony {
	c := newFakeColony(t)
	c.ok("create", "lab-a", "lab-b", "--colony", "lab")
	c.ok("create", "lab-gpu", "--colony", "lab", "--label", "tier=gpu")
	c.ok("create", "red-1", "red-2", "--colony", "lab", "--swarm", "red", "--role", "tester")
	c.ok("create", "oth-1", "oth-2", "--colony", "other")
	c.ok("create", "oth-myco", "--colony", "other", "--rank", "colony")
	return c
}

// names is what -o name printed, as spore ids.
func names(out string) []string {
	var ids []string
	for _, l := range strings.Fields(out) {
		ids = append(ids, strings.TrimPrefix(l, "spore/"))
	}
	return ids
}

func TestSelectorsOverCommands(t *testing.T) {
	c := selectRig(t)
	list := func(args ...string) []string {
		t.Helper()
		return names(c.ok(append([]string{"list", "-o", "name"}, args...)...))
	}
	assert.Equal(t, []string{"lab-a", "lab-b", "lab-gpu", "red-1", "red-2"}, list("-l", "colony=lab"))
	assert.Equal(t, []string{"lab-gpu"}, list("-l", "tier=gpu"), "a pod label")
	assert.Equal(t, []string{"red-1", "red-2"}, list("-l", "swarm"), "a field that is set")
	assert.Equal(t, []string{"oth-1", "oth-2"}, list("-l", "colony==other,rank!=colony"))
	assert.Equal(t, []string{"lab-a", "lab-b", "oth-1", "oth-2", "oth-myco"}, list("-l", "!swarm,tier notin (gpu)"))
	assert.Equal(t, []string{"oth-myco"}, list("-l", "rank in (colony),role notin (tester)", "--colony", "other"), "with --colony too")

	// wake -l, then sleep a selection narrowed by --all -l: only those change.
	assert.Equal(t, "spore/lab-a woken\nspore/lab-b woken\nspore/lab-gpu woken\nspore/red-1 woken\nspore/red-2 woken\n", c.ok("wake", "-l", "colony=lab"))
	assert.Equal(t, []string{"lab-a", "lab-b", "lab-gpu", "red-1", "red-2"}, list("-l", "desired=running"), "desired in any case")
	assert.Equal(t, "spore/red-1 asleep\nspore/red-2 asleep\n", c.ok("sleep", "--all", "-l", "swarm=red"))
	assert.Equal(t, []string{"lab-a", "lab-b", "lab-gpu"}, list("-l", "desired=Running"))
	assert.ElementsMatch(t, []string{"lab-a", "lab-b", "lab-gpu"}, c.rt.IDs(), "only the selected run")

	// status -l shows only the selection.
	assert.Equal(t, []string{"red-1", "red-2"}, names(c.ok("status", "-l", "swarm=red", "-o", "name")))

	// status --all is status: every spore.
	assert.Len(t, names(c.ok("status", "--all", "-o", "name")), 8)

	// stop --all: every spore.
	r := c.run("", "stop", "--all")
	require.Equal(t, 0, r.code, r.err)
	assert.Len(t, strings.Split(strings.TrimSpace(r.out), "\n"), 8)
	assert.Empty(t, c.rt.IDs())

	// --all=false is no selection: ids are taken.
	assert.Equal(t, "spore/lab-a woken\n", c.ok("wake", "lab-a", "--all=false"))
	assert.Equal(t, "spore/lab-a asleep\n", c.ok("sleep", "spore/lab-a"))

	// -o name round-trips through another command, as xargs would pass it.
	woken := names(c.ok("wake", "-o", "name", "lab-a"))
	assert.Equal(t, "spore/lab-a asleep\n", c.ok(append([]string{"sleep"}, "spore/"+woken[0])...))
	args := append([]string{"sleep"}, strings.Fields(c.ok("list", "-o", "name", "-l", "colony=other"))...)
	assert.Equal(t, "spore/oth-1 asleep\nspore/oth-2 asleep\nspore/oth-myco asleep\n", c.ok(args...))
}

func TestSelectorMatchingNothingDoesNothing(t *testing.T) {
	c := selectRig(t)
	for _, args := range [][]string{
		{"wake", "-l", "colony=nowhere"},
		{"sleep", "-l", "tier=cpu"},
		{"stop", "--all", "-l", "colony=lab,colony=other"},
		{"delete", "-l", "colony=nowhere"},
		{"status", "-l", "colony=nowhere"},
	} {
		r := c.run("", args...)
		require.Equal(t, 0, r.code, "%v: %s", args, r.err)
		assert.Empty(t, r.out, "%v", args)
		assert.Equal(t, "no spores match "+strings.Join(args[1:], " ")+"\n", r.err, "%v", args)
	}
	assert.Empty(t, c.rt.IDs(), "an empty selection is never every spore")
	assert.Len(t, names(c.ok("list", "-o", "name")), 8, "nothing deleted")
	assert.JSONEq(t, `{"spores":[]}`, c.ok("status", "-l", "colony=nowhere", "-o", "json"))
}

func TestSelectorUsageErrors(t *testing.T) {
	c := selectRig(t)
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"sleep", "lab-a", "-l", "colony=lab"}, "give spore ids or a selection (-l/--selector, --all), not both"},
		{[]string{"delete", "--all", "lab-a"}, "not both"},
		{[]string{"status", "lab-a", "-l", "colony=lab"}, "not both"},
		{[]string{"sleep", "-l", "colony=la b"}, `-l: invalid selector "colony=la b"`},
		{[]string{"sleep", "-l", ""}, "empty (use --all"},
		{[]string{"wake", "-l", "rank=captain"}, "rank"},
		{[]string{"wake", "-l", "desired in (Awake)"}, "desired state"},
		{[]string{"list", "-l", "colony in lab"}, "parentheses"},
		{[]string{"sleep"}, "needs at least one spore id, -l/--selector or --all"},
		{[]string{"delete", "--orphan", "--all"}, "--orphan takes the orphans' ids"},
		{[]string{"sleep", "-l", "colony=" + strings.Repeat("x", 1<<20)}, "bytes"},
	} {
		r := c.run("", tc.args...)
		require.Equal(t, ExitUsage, r.code, "%.80v: %s", tc.args, r.err)
		assert.Contains(t, r.err, tc.says, "%.80v", tc.args)
		assert.Less(t, len(r.err), 1000, "a huge selector is quoted bounded")
	}
}

// ttyRun runs a command as if on a terminal: a person types stdin.
func (c *fakeColony) ttyRun(stdin string, args ...string) result {
	c.t.Helper()
	var out, errb bytes.Buffer
	f := c.factory(strings.NewReader(stdin), &out, &errb)
	f.IO.CanPrompt = true
	code := RunWith(context.Background(), f, args)
	return result{out.String(), errb.String(), code}
}

func TestDeleteConfirmation(t *testing.T) {
	c := selectRig(t)
	count := func() int { return len(names(c.ok("list", "-o", "name"))) }

	// On a terminal: a no, or no answer at all, deletes nothing (exit 1).
	for _, answer := range []string{"n\n", "", "yes please\n", "\n"} {
		r := c.ttyRun(answer, "delete", "-l", "colony=other")
		assert.Equal(t, ExitError, r.code, "answer %q", answer)
		assert.Contains(t, r.err, "delete 3 spore(s): oth-1, oth-2, oth-myco? [y/N] ")
		assert.Contains(t, r.err, "not confirmed: nothing changed")
		assert.Empty(t, r.out)
		assert.Equal(t, 8, count(), "answer %q deletes nothing", answer)
	}
	// y proceeds; so does yes, in any case.
	r := c.ttyRun("y\n", "delete", "oth-1", "spore/oth-2")
	require.Equal(t, 0, r.code, r.err)
	assert.Contains(t, r.err, "delete 2 spore(s): oth-1, oth-2? [y/N] ")
	assert.Equal(t, "spore/oth-1 deleted\nspore/oth-2 deleted\n", r.out)
	r = c.ttyRun("YES\n", "delete", "--purge-home", "-l", "rank=colony")
	require.Equal(t, 0, r.code, r.err)
	assert.Contains(t, r.err, "delete 1 spore(s): oth-myco, with their homes? [y/N] ")
	// One named spore is not asked about, on a terminal or not.
	r = c.ttyRun("", "delete", "red-2")
	require.Equal(t, 0, r.code, r.err)
	assert.Empty(t, r.err)
	// --yes asks nothing.
	r = c.ttyRun("", "delete", "-y", "-l", "swarm=red")
	require.Equal(t, 0, r.code, r.err)
	assert.Equal(t, "spore/red-1 deleted\n", r.out)
	assert.Empty(t, r.err)
	assert.Equal(t, 3, count())

	// Not on a terminal: a selection needs --yes (exit 2, nothing
	// deleted); named ids proceed, as scripts did before.
	r = c.run("", "delete", "--all")
	assert.Equal(t, ExitUsage, r.code)
	assert.Contains(t, r.err, "--yes required when not running interactively (to delete 3 spore(s): lab-a, lab-b, lab-gpu)")
	assert.Equal(t, 3, count())
	r = c.run("", "delete", "lab-a", "lab-b")
	require.Equal(t, 0, r.code, r.err)
	r = c.run("", "delete", "--all", "--yes")
	require.Equal(t, 0, r.code, r.err)
	assert.Equal(t, "spore/lab-gpu deleted\n", r.out)
	assert.Zero(t, count())
}

func TestApplyPruneHomesConfirmation(t *testing.T) {
	eachStore(t, func(t *testing.T, r *applyRig) {
		r.ok("", "apply", "-f", r.file("lab.yaml", labColony))
		only := r.file("only.yaml", colonyHead+"  - id: red-1\n")

		// Not on a terminal, without --yes: refused, nothing applied.
		res := r.run("", "apply", "-f", only, "--prune", "--purge-home")
		require.Equal(t, ExitUsage, res.code, res.err)
		assert.Contains(t, res.err, "--yes required when not running interactively (to prune 2 spore(s) the files do not list, with their homes: lab-myco, red-lead)")
		assert.Equal(t, state.RankColony, statetest.Spore(t, r.st, "lab-myco").Rank, "nothing pruned")

		// On a terminal, a no applies nothing.
		tty := func(answer string) result {
			var out, errb bytes.Buffer
			f := r.factory(strings.NewReader(answer), &out, &errb)
			f.IO.CanPrompt = true
			code := RunWith(context.Background(), f, []string{"apply", "-f", only, "--prune", "--purge-home"})
			return result{out.String(), errb.String(), code}
		}
		// The document on stdin leaves nobody to answer: --yes required.
		var errb bytes.Buffer
		f := r.factory(strings.NewReader(colonyHead+"  - id: red-1\n"), io.Discard, &errb)
		f.IO.CanPrompt = true
		require.Equal(t, ExitUsage, RunWith(context.Background(), f, []string{"apply", "-f", "-", "--prune", "--purge-home"}))
		assert.Contains(t, errb.String(), "--yes required when not running interactively")

		res = tty("n\n")
		assert.Equal(t, ExitError, res.code, res.err)
		assert.Contains(t, res.err, "with their homes: lab-myco, red-lead? [y/N] ")
		assert.Empty(t, r.rt.deleted)
		// Without --purge-home, no question: the homes stay.
		two := r.file("two.yaml", colonyHead+"  - id: red-1\n  - id: red-lead\n    rank: swarm\n    swarm: red\n    loop: 30m\n")
		require.Contains(t, r.ok("", "apply", "-f", two, "--prune"), "spore/lab-myco pruned\n")
		assert.Equal(t, map[string]bool{"lab-myco": false}, r.rt.deleted, "its home kept")
		res = tty("y\n")
		require.Equal(t, 0, res.code, res.err)
		assert.Equal(t, "spore/red-1 unchanged\nspore/red-lead pruned\n", res.out)
		assert.True(t, r.rt.deleted["red-lead"], "its home went, as confirmed")
	})
}

func TestCheckConfirmed(t *testing.T) {
	assert.NoError(t, checkConfirmed(nil, []string{"a"}), "nothing asked (--yes, or no home deleted)")
	assert.NoError(t, checkConfirmed([]string{"a", "b"}, []string{"b"}))
	err := checkConfirmed([]string{"a"}, []string{"a", "new"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "new would be pruned with its home too, but it was not in the question")
}

// TestTypeSlashNameReachesEachCommand runs commands that take one spore
// end to end with spore/NAME: each finds the spore (its own outcome, not
// exit 4 for "spore/lab-a" or exit 2), where a misspelled name is not found.
func TestTypeSlashNameReachesEachCommand(t *testing.T) {
	c := selectRig(t)
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"events", "spore/lab-a"}, 0},
		{[]string{"chat", "spore/lab-a"}, 0},
		{[]string{"outbox", "spore/lab-a"}, 0},
		{[]string{"prompt", "spore/lab-a", "hello"}, ExitAsleep},
		{[]string{"set", "sleep-after", "spore/lab-a", "spore/lab-b", "2h"}, 0},
		{[]string{"set", "budget", "spore/lab-a", "--tokens", "100"}, 0},
		{[]string{"reset", "spore/lab-a"}, 0},
		{[]string{"token", "rotate", "spore/lab-a"}, 0},
		{[]string{"status", "spore/lab-a", "spore/lab-b"}, 0},
		{[]string{"reconcile", "spore/lab-a"}, 0},
	} {
		r := c.run("", tc.args...)
		assert.Equal(t, tc.code, r.code, "%v: %s", tc.args, r.err)
		assert.NotContains(t, r.err+r.out, "spore/spore", tc.args)
		miss := append([]string{}, tc.args...)
		miss[indexOfRef(tc.args)] = "spore/nobody"
		assert.Equal(t, ExitNotFound, c.run("", miss...).code, "%v", miss)
	}
	ev := c.ok("events", "spore/lab-a")
	for _, what := range []string{"sleep-after: sleeps after 2h0m0s idle", "budget 100 tokens a day", "reset: crash history forgotten", "token-rotated"} {
		assert.Contains(t, ev, what, "the command reached lab-a")
	}
}

// indexOfRef is the index of the first spore/ argument.
func indexOfRef(args []string) int {
	for i, a := range args {
		if strings.HasPrefix(a, "spore/") {
			return i
		}
	}
	return -1
}
