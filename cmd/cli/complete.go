package cli

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/bridge/agent"
	"github.com/sporectl/sporectl/state"
)

// Shell completion. Generating a script (`sporectl completion bash`) never
// opens the store; completing a spore id or a colony name reads it, once,
// with a short deadline, and offers nothing if it cannot (like kubectl
// completing pod names from the cluster).

// completeTimeout bounds the store read behind one completion.
const completeTimeout = 2 * time.Second

// storeNames lists what pick returns for every spore, deduplicated and
// sorted, filtered by the prefix typed so far.
func storeNames(f *Factory, toComplete string, pick func(state.Spore) string) []string {
	ctx, cancel := context.WithTimeout(context.Background(), completeTimeout)
	defer cancel()
	st, err := f.Store(ctx)
	if err != nil {
		return nil
	}
	defer st.Close()
	var out []string
	_ = st.View(ctx, func(tx state.Tx) error {
		spores, err := tx.Spores(ctx)
		for _, s := range spores {
			if v := pick(s); v != "" && strings.HasPrefix(v, toComplete) {
				out = append(out, v)
			}
		}
		return err
	})
	slices.Sort(out)
	return slices.Compact(out)
}

// completeSporeIDs completes spore ids for every argument (or only the
// first n when n > 0), never one already on the line, as ID or spore/ID.
func completeSporeIDs(f *Factory, n int) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if n > 0 && len(args) >= n {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ids := storeNames(f, toComplete, func(s state.Spore) string { return s.ID })
		ids = slices.DeleteFunc(ids, func(id string) bool {
			return slices.Contains(args, id) || slices.Contains(args, "spore/"+id)
		})
		return ids, cobra.ShellCompDirectiveNoFileComp
	}
}

func fixedCompletion(values ...string) cobra.CompletionFunc {
	return cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp)
}

// registerCompletions wires completion for the global flags and for each
// command's spore ids and enum-like flags.
func registerCompletions(root *cobra.Command, f *Factory) {
	_ = root.RegisterFlagCompletionFunc("output", fixedCompletion(outputFormats...))
	colonies := func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return storeNames(f, toComplete, func(s state.Spore) string { return s.Colony }), cobra.ShellCompDirectiveNoFileComp
	}
	idArgs := map[string]int{
		"status": 0, "wake": 0, "sleep": 0, "stop": 0, "delete": 0, "reset": 0, "reconcile": 0,
		"events": 1, "chat": 1, "prompt": 1, "logs": 1,
	}
	for _, cmd := range root.Commands() {
		if n, ok := idArgs[cmd.Name()]; ok {
			cmd.ValidArgsFunction = completeSporeIDs(f, n)
		}
		if cmd.Name() == "export" {
			cmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
				if len(args) > 0 {
					return nil, cobra.ShellCompDirectiveNoFileComp
				}
				return colonies(cmd, args, toComplete)
			}
		}
		flags := map[string]cobra.CompletionFunc{
			"colony":  colonies,
			"rank":    fixedCompletion(string(state.RankSpore), string(state.RankSwarm), string(state.RankColony), string(state.RankArch)),
			"runtime": fixedCompletion("local", "kube"),
			"agent":   fixedCompletion(agent.Kinds()...),
		}
		for name, fn := range flags {
			if cmd.Flags().Lookup(name) != nil {
				_ = cmd.RegisterFlagCompletionFunc(name, fn)
			}
		}
	}
	// Subcommands that name spores or a colony (docs/sleep.md).
	if c, _, err := root.Find([]string{"set", "sleep-after"}); err == nil && c.Name() == "sleep-after" {
		c.ValidArgsFunction = completeSporeIDs(f, 0)
	}
	if c, _, err := root.Find([]string{"colony", "set"}); err == nil && c.Name() == "set" {
		c.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return colonies(cmd, args, toComplete)
		}
	}
}
