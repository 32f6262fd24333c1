package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/bridge/agent"
	"github.com/sporectl/sporectl/bridge/sporeenv"
	"github.com/sporectl/sporectl/internal/quote"
	"github.com/sporectl/sporectl/kube/podgrammar"
	"github.com/sporectl/sporectl/state"
)

type initOptions struct {
	f            *Factory
	Runtime      string
	Agent        string
	StorageClass string
	Image        string
	CPU, Memory  string
	Storage      string
	APIURL       string
	// ModelGateway is how spores reach the model: state.GatewayOn or
	// state.GatewayOff (--model-gateway).
	ModelGateway string
	// ModelCallsPerMinute is a spore's limit of model calls through the
	// gateway (0: the default).
	ModelCallsPerMinute int
	Recovery            recoveryFlags
	// Pod sets the store's default pod options (default_spec.pod).
	Pod podFlags
	// PodSecrets, given, replace the Secrets pod options may name
	// (pod_secrets); one empty value: none.
	PodSecrets []string
	// Operator names the first operator, whose login token init makes
	// (default $USER); NoOperator makes none.
	Operator   string
	NoOperator bool
	changed    func(string) bool
}

// recoveryFlags tune crash recovery (docs/recovery.md); unset flags keep
// the store's values (or the defaults).
type recoveryFlags struct {
	BackoffInitial, BackoffMax, BreakerWindow, HealthyAfter time.Duration
	BreakerFailures                                         int
}

// newCmdInit builds the command; runF, when not nil, is called instead of
// running it (tests of what the flags parse into).
func newCmdInit(f *Factory, runF func(context.Context, *initOptions) error) *cobra.Command {
	o := &initOptions{f: f}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create a store, or update the settings of an existing one",
		Long: `Create the store named by --store (or $SPORECTL_STORE, or the default directory).
On an existing store, init changes only the settings whose flags are given.

A new store gets its first operator: init makes a login token for the page that
'sporectl serve' mounts at /ui/, for --operator NAME (default $USER), and prints
it once on standard output, as 'sporectl token create --operator NAME' does.
Every page needs a login; --no-operator makes no token (then nobody can log in
until 'token create' makes one). On an existing store without an operator
token, --operator NAME makes the first.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.changed = cmd.Flags().Changed
			if err := o.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.run(cmd.Context())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Runtime, "runtime", "local", "where spores run: local|kube")
	fl.StringVar(&o.Agent, "agent", agent.Default, "the agent each bridge runs: claude|echo (echo is a demo agent)")
	fl.StringVar(&o.StorageClass, "storage-class", state.DefaultStorageClass, "storage class of spore homes (kube)")
	fl.StringVar(&o.Image, "image", "", "default spore image (kube)")
	fl.StringVar(&o.CPU, "cpu", state.DefaultCPU, "default CPU per spore")
	fl.StringVar(&o.Memory, "memory", state.DefaultMemory, "default memory per spore")
	fl.StringVar(&o.Storage, "storage", state.DefaultStorage, "default size of a spore's home")
	fl.StringVar(&o.APIURL, "api-url", "", "how spores reach 'sporectl serve' (default: local runtime http://"+defaultServeAddr+", kube the sporectl-api Service)")
	fl.StringVar(&o.ModelGateway, "model-gateway", state.GatewayOn, "how spores reach the model: on (through 'sporectl serve', which alone holds the key and counts and stops spend) or off (direct: the key in every spore)")
	fl.IntVar(&o.ModelCallsPerMinute, "model-calls-per-minute", 0, fmt.Sprintf("model calls the gateway lets one spore make per minute (0: the default, %d)", state.DefaultModelCallsPerMinute))
	fl.DurationVar(&o.Recovery.BackoffInitial, "backoff-initial", state.DefaultBackoffInitial, "wait before respawning a spore after its first crash; doubles with each further crash")
	fl.DurationVar(&o.Recovery.BackoffMax, "backoff-max", state.DefaultBackoffMax, "the longest wait between respawns")
	fl.IntVar(&o.Recovery.BreakerFailures, "breaker-failures", state.DefaultBreakerFailures, "crashes inside --breaker-window that open the circuit breaker")
	fl.DurationVar(&o.Recovery.BreakerWindow, "breaker-window", state.DefaultBreakerWindow, "window in which crashes are counted")
	fl.DurationVar(&o.Recovery.HealthyAfter, "healthy-after", state.DefaultHealthyAfter, "time without a crash after which a spore's crash count starts over")
	fl.StringVar(&o.Operator, "operator", "", "the first operator's name, whose login token to the page init prints once (default $USER)")
	o.Pod.register(fl)
	fl.StringArrayVar(&o.PodSecrets, "pod-secret", nil, "a Secret that pod options (--env-from-secret, a Colony's envFromSecrets) may name, repeatable; replaces the store's list (--pod-secret '' empties it)")
	fl.BoolVar(&o.NoOperator, "no-operator", false, "make no operator token (nobody can log in to the page until 'token create --operator' makes one)")
	return cmd
}

func (o *initOptions) validate() error {
	if o.Runtime != "local" && o.Runtime != "kube" {
		return usageErrorf("invalid value %s for --runtime: use local or kube", quote.Value(o.Runtime))
	}
	if err := validateAgent(o.Agent); err != nil {
		return err
	}
	for flag, v := range map[string]string{"cpu": o.CPU, "memory": o.Memory, "storage": o.Storage} {
		if err := validateQuantity(flag, v, o.changed(flag)); err != nil {
			return err
		}
	}
	if err := validateImage(o.Image, o.changed("image")); err != nil {
		return err
	}
	if err := validateAPIURL(o.APIURL, o.changed("api-url")); err != nil {
		return err
	}
	if err := o.validateModel(); err != nil {
		return err
	}
	for _, name := range o.podSecrets() {
		if err := invalid("--pod-secret", name, podgrammar.SecretName(name)); err != nil {
			return err
		}
	}
	if err := o.recovery(state.RecoveryPolicy{}).Validate(); err != nil {
		return usageErrorf("%v (flag --%s)", err, recoveryFlag(err))
	}
	if _, err := o.Pod.onto(nil, o.changed, true); err != nil {
		return err
	}
	return o.validateOperator()
}

// validateOperator checks --operator and --no-operator; an unset
// --operator is $USER, or "operator" when that is not a valid name.
func (o *initOptions) validateOperator() error {
	if o.NoOperator && o.changed("operator") {
		return usageErrorf("--operator and --no-operator exclude each other")
	}
	if !o.NoOperator && o.f.Global.Output == "name" {
		// -o name prints kind/name only (docs/cli.md): the token, shown
		// once, would be lost with it.
		return usageErrorf("init -o name would not print the operator token it makes: use the default output or -o json, or pass --no-operator")
	}
	if !o.changed("operator") {
		o.Operator = userName(o.f.Getenv)
	}
	if err := state.ValidateName("operator name", o.Operator); err != nil {
		return usageErrorf("invalid value %s for --operator: %v", quote.Value(o.Operator), err)
	}
	return nil
}

// recoveryFlag names the flag of a recovery.* setting in an error.
func recoveryFlag(err error) string {
	var inv *state.InvalidError
	if errors.As(err, &inv) {
		return strings.ReplaceAll(strings.TrimPrefix(inv.Field, "recovery."), "_", "-")
	}
	return "backoff-initial"
}

// recovery applies the recovery flags that were given to cur.
func (o *initOptions) recovery(cur state.RecoveryPolicy) state.RecoveryPolicy {
	dur := func(flag string, dst *state.Duration, v time.Duration) {
		if o.changed(flag) {
			*dst = state.Duration(v)
		}
	}
	dur("backoff-initial", &cur.BackoffInitial, o.Recovery.BackoffInitial)
	dur("backoff-max", &cur.BackoffMax, o.Recovery.BackoffMax)
	dur("breaker-window", &cur.BreakerWindow, o.Recovery.BreakerWindow)
	dur("healthy-after", &cur.HealthyAfter, o.Recovery.HealthyAfter)
	if o.changed("breaker-failures") {
		cur.BreakerFailures = o.Recovery.BreakerFailures
	}
	return cur
}

func (o *initOptions) settings() state.Settings {
	ns := o.f.Global.Namespace
	if ns == "" && o.Runtime == "kube" {
		ns = "sporectl"
	}
	return o.model(state.Settings{
		Runtime: o.Runtime, Agent: o.Agent, Namespace: ns, StorageClass: o.StorageClass, Image: o.Image, APIURL: o.APIURL,
		DefaultSpec: state.Spec{CPU: o.CPU, Memory: o.Memory, Storage: o.Storage, Pod: o.pod(nil)},
		Recovery:    o.recovery(state.RecoveryPolicy{}),
	}).WithPodSecrets(o.podSecrets())
}

// podSecrets are the names --pod-secret gives ("" says none).
func (o *initOptions) podSecrets() []string {
	var names []string
	for _, n := range o.PodSecrets {
		if n != "" {
			names = append(names, n)
		}
	}
	return names
}

// pod applies the pod option flags that were given to the store's
// default cur (validate has checked them), keeping cur itself when they
// change nothing, so settings that did not change compare equal.
func (o *initOptions) pod(cur *state.PodOptions) *state.PodOptions {
	next, err := o.Pod.onto(cur, o.changed, true)
	if err != nil || reflect.DeepEqual(next, cur) {
		return cur
	}
	return next
}

func (o *initOptions) run(ctx context.Context) error {
	// A new store is created with its first operator in it: no moment
	// where it exists without one, and no second transaction to fail.
	first, err := o.firstOperator()
	if err != nil {
		return err
	}
	settings := o.settings()
	if first != nil {
		settings = settings.WithOperators([]state.OperatorToken{first.entry})
	}
	st, created, err := o.f.InitStore(ctx, settings)
	if err != nil {
		return err
	}
	defer st.Close()
	action := "created"
	final := o.settings()
	var before state.Settings // an existing store's, as the update read them
	if !created {
		action = "unchanged"
		err := st.Update(ctx, func(tx state.Tx) error {
			action = "unchanged" // fn may run again (state.Store)
			cur, err := tx.Settings(ctx)
			if err != nil {
				return err
			}
			next := o.merge(cur)
			final, before = next, cur
			if err := next.Recovery.Validate(); err != nil {
				return usageErrorf("%v (flag --%s, with the store's other recovery settings)", err, recoveryFlag(err))
			}
			// An existing store gets a first operator only when asked
			// for one by name, and never a second (token create's job).
			if first != nil && (!o.changed("operator") || len(cur.OperatorTokens()) > 0) {
				if o.changed("operator") {
					fmt.Fprintf(o.f.IO.ErrOut, "The store has operator tokens already; no token made (sporectl token create --operator %s makes one).\n", o.Operator)
				}
				first = nil
			}
			if first != nil {
				next = next.WithOperators([]state.OperatorToken{first.entry})
			}
			if next == cur {
				return nil
			}
			action = "configured"
			return tx.PutSettings(ctx, next)
		})
		if err != nil {
			return fmt.Errorf("update store settings: %w", err)
		}
	}
	res := initResult{Results: []actionResult{{Kind: "store", ID: st.Info().Location, Action: action}}}
	if first != nil {
		res.Operator = &first.printed
		operatorNotice(o.f.IO.ErrOut, o.Operator)
	}
	if err := o.f.Print(res); err != nil {
		return err
	}
	o.warnAgent(final)
	if !created && final.APIURL != before.APIURL {
		apiURLNotice(o.f.IO.ErrOut, before, final)
	}
	if created || o.changed("model-gateway") || o.changed("runtime") || o.changed("api-url") {
		modelNotice(o.f.IO.ErrOut, final)
	}
	if flags := o.Pod.given(o.changed); len(flags) > 0 && final.Runtime != "kube" {
		fmt.Fprintln(o.f.IO.ErrOut, podWarning(flags, "the store keeps them as its spores' default"))
	}
	return nil
}

// newOperator is an operator token init makes: the entry the store keeps
// and what is printed once.
type newOperator struct {
	entry   state.OperatorToken
	printed operatorCreated
}

// firstOperator makes --operator's token, unless --no-operator.
func (o *initOptions) firstOperator() (*newOperator, error) {
	if o.NoOperator {
		return nil, nil
	}
	token, hash, err := state.NewOperatorToken()
	if err != nil {
		return nil, fmt.Errorf("make the first operator token: %w", err)
	}
	now := o.f.Now().UTC().Truncate(time.Second)
	return &newOperator{
		entry:   state.OperatorToken{Name: o.Operator, Hash: hash, Session: state.SessionHash(state.OperatorSessionKey(token)), Created: now},
		printed: operatorCreated{Operator: o.Operator, Token: token, Created: now},
	}, nil
}

// initResult is what init prints: the store's line, then, when it made
// the first operator's token, that token alone on a line, as token create
// prints it (-o json: under "operator").
type initResult struct {
	Results  []actionResult   `json:"results"`
	Operator *operatorCreated `json:"operator,omitempty"`
}

func (r initResult) Table(wide bool) ([]string, [][]string) {
	_, rows := actionResults{Results: r.Results}.Table(wide)
	if r.Operator != nil {
		_, tok := r.Operator.Table(wide)
		rows = append(rows, tok...)
	}
	return nil, rows
}

func (r initResult) Names() []string {
	names := actionResults{Results: r.Results}.Names()
	if r.Operator != nil {
		names = append(names, r.Operator.Names()...)
	}
	return names
}

// warnAgent says on stderr, before any spore fails to start for it, that
// the local bridges will find no Claude Code where they look (the same
// lookup: $SPORECTL_CLAUDE_BIN, then $PATH), and how to fix it. On kube
// the agent is in the spore image, not here.
func (o *initOptions) warnAgent(s state.Settings) {
	if s.Runtime != "local" || cmp.Or(s.Agent, agent.Default) != agent.KindClaude {
		return
	}
	bin, err := findClaude("", o.f.Getenv)
	if err != nil {
		fmt.Fprintf(o.f.IO.ErrOut, "warning: the agent is claude, but no claude executable is on $PATH and $%s is not set: spores will not start. "+
			"Install Claude Code, set $%s in the environment of the commands that wake spores, or use the demo agent: sporectl init --agent echo\n", sporeenv.ClaudeBin, sporeenv.ClaudeBin)
		return
	}
	// Named by the environment: the bridge checks it the same way at
	// start, and stops if it cannot run it.
	if err := agent.CheckBin(agent.KindClaude, bin); err != nil {
		fmt.Fprintf(o.f.IO.ErrOut, "warning: the agent is claude, but %v (named by $%s): spores will not start. "+
			"Point $%s at Claude Code in the environment of the commands that wake spores, or use the demo agent: sporectl init --agent echo\n", err, sporeenv.ClaudeBin, sporeenv.ClaudeBin)
	}
}

// apiURLNotice says on stderr that spores running now were told the old
// URL when they started (SPORECTL_API_URL of their bridge and agent) and
// keep it until they start again, and how to start one again.
func apiURLNotice(w io.Writer, before, after state.Settings) {
	fmt.Fprintf(w, "note: the API URL is now %s (was %s). Spores running now keep the old one until they start again: "+
		"'sporectl sleep ID' then 'sporectl wake ID' starts one again with the new URL.\n",
		cmp.Or(after.APIURL, "the default"), cmp.Or(before.APIURL, "the default"))
}

// merge applies the flags the user gave to the stored settings.
func (o *initOptions) merge(cur state.Settings) state.Settings {
	n := cur
	set := func(flag string, dst *string, v string) {
		if o.changed(flag) {
			*dst = v
		}
	}
	set("runtime", &n.Runtime, o.Runtime)
	set("agent", &n.Agent, o.Agent)
	set("storage-class", &n.StorageClass, o.StorageClass)
	set("image", &n.Image, o.Image)
	set("api-url", &n.APIURL, o.APIURL)
	n = o.model(n)
	set("cpu", &n.DefaultSpec.CPU, o.CPU)
	set("memory", &n.DefaultSpec.Memory, o.Memory)
	set("storage", &n.DefaultSpec.Storage, o.Storage)
	if o.f.Global.Namespace != "" {
		n.Namespace = o.f.Global.Namespace
	}
	n.Recovery = o.recovery(n.Recovery)
	n.DefaultSpec.Pod = o.pod(cur.DefaultSpec.Pod)
	if o.changed("pod-secret") && !slices.Equal(o.podSecrets(), cur.PodSecrets()) {
		n = n.WithPodSecrets(o.podSecrets())
	}
	return n
}
