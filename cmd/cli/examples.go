package cli

import (
	"strings"

	"github.com/spf13/cobra"
)

// examples is every command's --help examples, in one place so that they
// read alike and one test (examples_test.go) checks that each command has
// some and that each line parses as the command it shows. Keyed by the
// command's path without "sporectl"; a line is "sporectl …", optionally
// followed by "# what it does". No pipes, redirections or shell
// variables: a line is what a person types, whole.
var examples = map[string]string{
	"": `sporectl init                          # a local store under ~/.local/state/sporectl
sporectl create w1 --wake              # a spore, started now
sporectl prompt w1 "fix the failing test"
sporectl status                        # desired, observed and effective health`,

	"apply": `sporectl apply -f colony.yaml           # create or configure the colony's spores
sporectl apply -f colonies/ --prune     # also delete the spores the files no longer list`,
	"bridge": `sporectl bridge --addr :8080 --home /home/spore   # inside a spore, started by its runtime
sporectl bridge --agent echo                       # a bridge with the echo agent, for tests`,
	"chat": `sporectl chat w1                       # the conversation so far
sporectl chat w1 -f                    # and follow it as it goes on`,
	"check": `sporectl check                         # verify every checksum and invariant of the store
sporectl check --store postgres://sporectl@db/sporectl`,
	"colony": `sporectl colony list
sporectl colony set lab --sleep-after 30m
sporectl colony delete labb`,
	"colony delete": `sporectl colony delete labb                # settings stored under a misspelt name`,
	"colony list": `sporectl colony list                   # idle sleep, budget and spend today
sporectl colony list -o wide           # with pod options`,
	"colony set": `sporectl colony set lab --sleep-after 30m --wake-on-message
sporectl colony set lab --budget-tokens 2000000 --budget-cost 20
sporectl colony set lab --egress none --runtime-class gvisor`,
	"create": `sporectl create w1 --colony lab --wake
sporectl create t1 t2 t3 --swarm build --role tester --colony lab
sporectl create lab-myco --rank colony --colony lab
sporectl create w2 --budget-tokens 500000 --budget-cost 2.50 --sleep-after 1h`,
	"delete": `sporectl delete w1                     # remove it from the store and end its processes
sporectl delete w1 w2 --purge-home     # and remove their homes
sporectl delete --orphan w9            # what status lists as an orphan`,
	"describe": `sporectl describe w1
sporectl describe w1 w2 --events 20
sporectl describe w1 -o yaml`,
	"diff": `sporectl diff -f colony.yaml            # what apply would change
sporectl diff -f colony.yaml --prune`,
	"events": `sporectl events w1 --tail 20
sporectl events w1 -w                  # follow new events
sporectl events w1 --since 120 -o json`,
	"export": `sporectl export lab                    # the colony as a file for apply
sporectl export lab -o yaml`,
	"init": `sporectl init                          # a local store under ~/.local/state/sporectl
sporectl init --store ./colony --api-url http://127.0.0.1:7070
sporectl init --store postgres://sporectl@db/sporectl --runtime kube`,
	"list": `sporectl list
sporectl list --colony lab -o wide
sporectl list -o name`,
	"logs": `sporectl logs w1 --tail 100
sporectl logs w1 -f                    # follow the bridge's log
sporectl logs w1 --previous            # the log of the run before the last restart`,
	"mycologist": `sporectl mycologist spores             # inside a mycologist's spore
sporectl mycologist tell w1 "rebase on main"`,
	"mycologist ask":        `sporectl mycologist ask "which spore owns the parser?"`,
	"mycologist collisions": `sporectl mycologist collisions --window 2h`,
	"mycologist deploys":    `sporectl mycologist deploys --window 24h`,
	"mycologist host-logs": `sporectl mycologist host-logs                  # the hosts' logs
sporectl mycologist host-logs sporectl-serve-0 --tail 50`,
	"mycologist hosts": `sporectl mycologist hosts`,
	"mycologist report": `sporectl mycologist report push "pushed fix-parser to origin"
sporectl mycologist report deploy "deployed v1.4 to staging" --failed`,
	"mycologist spore":  `sporectl mycologist spore w1 --turns 3`,
	"mycologist spores": `sporectl mycologist spores`,
	"mycologist tell": `sporectl mycologist tell w1 "rebase on main"
sporectl mycologist tell w1 "wake up: the build is red" --wake`,
	"outbox": `sporectl outbox w1                     # queued entries and dead letters
sporectl outbox drop w1 p-2ef8b2aa2066faf7706f5953`,
	"outbox drop": `sporectl outbox drop w1 p-2ef8b2aa2066faf7706f5953`,
	"prompt": `sporectl prompt w1 "fix the failing test"
sporectl prompt w1 "start the nightly run" --wake --timeout 2m
sporectl prompt w1 -                   # the text from stdin`,
	"reconcile": `sporectl reconcile                     # observe, deliver, heal, commit, project
sporectl reconcile --dry-run           # what it would do, writing nothing
sporectl reconcile --every 30s         # the loop: a pass every 30s until SIGTERM
sporectl reconcile --every 1m --give-up-after 10m
sporectl reconcile --metrics-file /var/lib/node_exporter/sporectl.prom`,
	"repair": `sporectl repair b --dry-run            # after check named b's damage: what would be kept and what set aside
sporectl repair b`,
	"reset": `sporectl reset w1                      # close its breaker and forget its crashes`,
	"serve": `sporectl serve                         # the spores' API and the operators' page on the store's api-url
sporectl serve --reconcile-every 30s   # and run the colony's loop in the same process
sporectl serve --addr 127.0.0.1:7070 --insecure-listen
sporectl serve --tls-cert tls.crt --tls-key tls.key`,
	"set": `sporectl set sleep-after w1 30m
sporectl set budget w1 --tokens 500000`,
	"set budget": `sporectl set budget w1 --tokens 500000 --cost 2.50
sporectl set budget w1 --cost 1        # keeps the token limit
sporectl set budget w1 --tokens 0      # removes the token limit alone
sporectl set budget w1 --clear         # removes its own budget`,
	"set sleep-after": `sporectl set sleep-after w1 w2 30m
sporectl set sleep-after w1 0          # its colony's setting again`,
	"sleep": `sporectl sleep w1                      # end its processes, keep its home
sporectl sleep w1 w2`,
	"status": `sporectl status
sporectl status w1 -o json
sporectl status -w                     # print rows again as they change`,
	"stop": `sporectl stop w1`,
	"completion": `sporectl completion bash              # the script for bash; source it, or save it in bash_completion.d
sporectl completion zsh`,
	"completion bash":       `sporectl completion bash`,
	"completion zsh":        `sporectl completion zsh`,
	"completion fish":       `sporectl completion fish`,
	"completion powershell": `sporectl completion powershell`,
	"store":                 `sporectl store copy ./colony postgres://sporectl@db/sporectl`,
	"store copy":            `sporectl store copy ./colony postgres://sporectl@db/sporectl`,
	"swarm": `sporectl swarm tell tester "run the suite again"   # inside a swarm mycologist's spore
sporectl swarm loop 30m`,
	"swarm compact": `sporectl swarm compact tester`,
	"swarm loop": `sporectl swarm loop 30m                # prompt the swarm every 30 minutes
sporectl swarm loop --stop`,
	"swarm tell": `sporectl swarm tell tester "run the suite again"`,
	"token": `sporectl token rotate w1
sporectl token create --operator alice`,
	"token create": `sporectl token create --operator alice   # prints the token once`,
	"token list":   `sporectl token list --operator`,
	"token revoke": `sporectl token revoke --operator alice`,
	"token rotate": `sporectl token rotate w1`,
	"version": `sporectl version
sporectl version -o json`,
	"wake": `sporectl wake w1
sporectl wake w1 --wait 2m             # until its bridge answers, at most 2 minutes`,
}

// applyExamples sets each command's Example from examples, indented as
// cobra prints it. A command with none keeps its own (the test says
// which lack one).
func applyExamples(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if ex, ok := examples[examplesKey(c)]; ok {
			c.Example = indentExample(ex)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// examplesKey is c's path under the root: "set budget"; "" for the root.
func examplesKey(c *cobra.Command) string {
	path := c.CommandPath()
	if c.HasParent() {
		_, path, _ = strings.Cut(path, " ")
		return path
	}
	return ""
}

func indentExample(ex string) string {
	lines := strings.Split(ex, "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return strings.Join(lines, "\n")
}
