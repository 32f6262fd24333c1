package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// hugeLines are command lines each with one value, HUGE, made huge: an
// id, a name, a flag's value, a path, a subcommand, a flag's name.
var hugeLines = []string{
	"status HUGE", "describe HUGE", "events HUGE", "wake HUGE", "sleep HUGE", "stop HUGE", "delete HUGE", "reset HUGE",
	"logs HUGE", "chat HUGE", "prompt w1 HUGE", "prompt HUGE hi", "outbox HUGE", "outbox drop w1 HUGE", "repair HUGE",
	"export HUGE", "list --colony HUGE", "create HUGE", "create a2 --colony HUGE", "create a2 --image HUGE",
	"create a2 --cpu HUGE", "create a2 --label HUGE=v", "create a2 --label k=HUGE", "create a2 --annotation k=HUGE",
	"create a2 --node-selector HUGE=v", "create a2 --toleration HUGE", "create a2 --env-from-secret HUGE",
	"create a2 --runtime-class HUGE", "create a2 --rank HUGE", "create a2 --swarm HUGE --role r",
	"create a2 --sleep-after HUGE", "create a2 --budget-cost HUGE", "create a2 --budget-tokens HUGE",
	"set budget w1 --cost HUGE", "set budget w1 --tokens HUGE", "set sleep-after w1 HUGE",
	"colony set HUGE --sleep-after 1m", "colony set lab --sleep-after HUGE", "colony set lab --egress HUGE",
	"colony set lab --budget-cost HUGE", "colony delete HUGE", "token rotate HUGE", "token create --operator HUGE",
	"token revoke --operator HUGE", "status -o HUGE", "status --watch-interval HUGE", "events w1 --since HUGE",
	"events w1 --tail HUGE", "logs w1 --tail HUGE", "apply -f HUGE", "diff -f HUGE", "store copy HUGE /nonexistent/x",
	"store copy STORE HUGE", "serve --addr HUGE", "serve --rate-limit HUGE", "reconcile --views /tmp/HUGE",
	"reconcile --metrics-file /tmp/HUGE", "swarm loop HUGE", "swarm tell HUGE hi", "mycologist tell HUGE hi",
	"mycologist spore HUGE", "mycologist collisions --window HUGE", "wake w1 --wait HUGE", "colony HUGE",
	"set HUGE", "init --runtime HUGE", "init --agent HUGE", "init --cpu HUGE", "init --backoff-initial HUGE",
	"init --model-gateway HUGE", "bridge --agent HUGE", "--store HUGE status", "-n HUGE status", "--context HUGE status",
	"--kubeconfig HUGE status", "status --HUGE", "status -vHUGE", "--store /tmp/HUGE status",
	"HUGE", "help HUGE",
}

// hugeBytes is the size of HUGE: far past every bound of a message
// (internal/quote's own tests take 30 MB through them), small enough that
// eighty commands each given one stay quick.
const hugeBytes = 1 << 20

// maxFaultBytes is the most a command may write on stderr about one bad
// value, however big the value.
const maxFaultBytes = 8 << 10

// Every command given a huge value where one value goes (an argument, a
// flag, a path, a file's field, the store's variable, stdin) says so in
// a few KB: the value is quoted by a bounded prefix and its length, never
// whole; stdout gets no echo of it either.
func TestHugeValuesAreNeverEchoedWhole(t *testing.T) {
	huge := strings.Repeat("x", hugeBytes)
	c := newFakeColony(t)
	c.ok("create", "w1", "--colony", "lab")
	check := func(t *testing.T, r result) {
		t.Helper()
		// Whether it is refused is each command's own test's (an unknown
		// subcommand, a kube flag on a local store: not here).
		require.Less(t, len(r.err), maxFaultBytes, "stderr: %.300s", r.err)
		require.Less(t, len(r.out), maxFaultBytes, "stdout: %.300s", r.out)
	}
	for _, line := range hugeLines {
		t.Run(line, func(t *testing.T) {
			args := strings.Fields(line)
			for i, a := range args {
				a = strings.ReplaceAll(a, "STORE", c.store)
				args[i] = strings.ReplaceAll(a, "HUGE", huge)
			}
			check(t, c.run("", args...))
		})
	}

	t.Run("the store's variable", func(t *testing.T) {
		var out, errb strings.Builder
		f := c.factory(strings.NewReader(""), &out, &errb)
		f.Getenv = func(k string) string {
			if k == EnvStore {
				return "/tmp/" + huge
			}
			return ""
		}
		code := RunWith(t.Context(), f, []string{"status"})
		check(t, result{out.String(), errb.String(), code})
	})
	t.Run("stdin", func(t *testing.T) {
		check(t, c.run(huge, "prompt", "w1", "-"))
	})
	dir := t.TempDir()
	fields := map[string]string{
		"id":        "spec:\n  spores:\n  - id: HUGE\n",
		"colony":    "metadata:\n  name: HUGE\nspec:\n  spores:\n  - id: a\n",
		"image":     "spec:\n  spores:\n  - id: a\n    image: HUGE\n",
		"label":     "spec:\n  spores:\n  - id: a\n    pod:\n      labels:\n        HUGE: v\n",
		"key":       "spec:\n  HUGE: 1\n",
		"sleep":     "spec:\n  sleepAfter: HUGE\n  spores:\n  - id: a\n",
		"not yaml":  "spec: [HUGE\n",
		"kind":      "kind: HUGE\n",
		"quoted id": "spec:\n  spores:\n  - id: \"HUGE\\x1b\"\n",
	}
	for name, body := range fields {
		t.Run("apply "+name, func(t *testing.T) {
			doc := "apiVersion: sporectl/v1\nkind: Colony\nmetadata:\n  name: lab\n" + body
			if strings.HasPrefix(body, "metadata:") || strings.HasPrefix(body, "kind:") {
				doc = "apiVersion: sporectl/v1\nkind: Colony\n" + body
			}
			p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
			require.NoError(t, os.WriteFile(p, []byte(strings.ReplaceAll(doc, "HUGE", huge)), 0o600))
			start := time.Now()
			check(t, c.run("", "apply", "-f", p))
			check(t, c.run("", "diff", "-f", p))
			require.Less(t, time.Since(start), time.Minute)
		})
	}
}
