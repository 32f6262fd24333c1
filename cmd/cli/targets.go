package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/internal/selector"
	"github.com/sporectl/sporectl/state"
)

// targetFlags are -l/--selector and --all of a command that acts on
// spores (docs/cli.md, "Selecting spores"): instead of naming ids, it
// acts on every spore, or on those a selector matches, read from the
// store in one listing when the command runs.
type targetFlags struct {
	Selector string
	All      bool
}

// addTargetFlags gives cmd -l/--selector and --all; its Args (sporeIDs)
// then accepts no ids when either is given, and refuses ids with them.
func addTargetFlags(cmd *cobra.Command, t *targetFlags) {
	cmd.Flags().StringVarP(&t.Selector, "selector", "l", "", "act on the spores this selector matches: colony=lab, rank!=arch, desired in (Paused,Stopped), a pod label (see \"Selecting spores\" in the docs)")
	cmd.Flags().BoolVar(&t.All, "all", false, "act on every spore (with -l: every spore it matches)")
}

// given says the command selects rather than names its spores.
func (t targetFlags) given() bool { return t.All || t.Selector != "" }

// String is how a message names the selection.
func (t targetFlags) String() string {
	switch {
	case t.Selector != "" && t.All:
		return "--all -l " + t.Selector
	case t.Selector != "":
		return "-l " + t.Selector
	}
	return "--all"
}

// selecting reports whether cmd was given -l (even empty: Args refuses
// that) or --all (true: --all=false selects nothing); false for a command
// without them.
func selecting(cmd *cobra.Command) bool {
	if f := cmd.Flags().Lookup("selector"); f != nil && f.Changed {
		return true
	}
	f := cmd.Flags().Lookup("all")
	return f != nil && f.Value.String() == "true"
}

// orSelection is the end of a "needs at least one spore id" usage error:
// the other way to say which, where the command has one.
func orSelection(cmd *cobra.Command) string {
	if cmd.Flags().Lookup("selector") == nil {
		return ""
	}
	return ", -l/--selector or --all"
}

// checkSelectorFlag refuses a bad -l before anything runs (exit 2).
func checkSelectorFlag(cmd *cobra.Command) error {
	f := cmd.Flags().Lookup("selector")
	if f == nil || !f.Changed {
		return nil
	}
	_, err := parseSporeSelector(f.Value.String())
	return err
}

// parseSporeSelector parses s and checks the values of the fields that
// have a fixed set of them, so `rank=captain` is a usage error rather than
// a selection of nothing; desired is taken in any case (Paused, paused),
// as the desired-state flags take it.
func parseSporeSelector(s string) (selector.Selector, error) {
	sel, err := selector.Parse(s)
	if err != nil {
		return nil, usageErrorf("-l: %v", err)
	}
	for _, r := range sel {
		for i, v := range r.Values {
			switch r.Key {
			case "desired":
				d, err := state.ParseDesired(v)
				if err != nil {
					return nil, usageErrorf("-l: %v", err)
				}
				r.Values[i] = string(d)
			case "rank":
				if _, err := state.ParseRank(v); err != nil {
					return nil, usageErrorf("-l: %v", err)
				}
			}
		}
	}
	return sel, nil
}

// sporeFields is what a selector reads of s: the fields colony, rank,
// swarm, role and desired, then any other key from its own pod labels
// (spec.pod.labels; not its colony's or the store's, which a selector by
// colony covers). A field's key wins over a label of the same name. An
// empty swarm or role is no such key (`-l swarm` selects the spores in
// a swarm).
func sporeFields(s *state.Spore) selector.Lookup {
	return func(k string) (string, bool) {
		switch k {
		case "colony":
			return s.Colony, s.Colony != ""
		case "rank":
			return string(s.Rank), true
		case "swarm":
			return s.Swarm, s.Swarm != ""
		case "role":
			return s.Role, s.Role != ""
		case "desired":
			return string(s.Desired), true
		}
		if s.Spec.Pod == nil {
			return "", false
		}
		v, ok := s.Spec.Pod.Labels[k]
		return v, ok
	}
}

// resolveTargets is the spores a command acts on. Ids given by name come
// back as they are, with no store read: a command about one spore costs
// the same in a fleet of 10,000. With -l or --all it reads the store's
// spores once and returns the matching ids in id order; ok is false when
// none matched, which it has said on stderr ("no spores match"), and the
// command then does nothing and exits 0. A spore whose record does not
// read is never selected (a warning names it): acting on what cannot be
// read is repair's business.
func resolveTargets(ctx context.Context, f *Factory, st state.Store, ids []string, t targetFlags) (_ []string, ok bool, _ error) {
	if !t.given() {
		return ids, true, nil
	}
	var sel selector.Selector
	if t.Selector != "" {
		var err error
		if sel, err = parseSporeSelector(t.Selector); err != nil {
			return nil, false, err
		}
	}
	var out []string
	err := st.View(ctx, func(tx state.Tx) error {
		out = out[:0]
		spores, err := tx.Spores(ctx)
		if damaged, ok := errors.AsType[*state.DamagedError](err); ok {
			fmt.Fprintf(f.IO.ErrOut, "warning: not selected, their stored data does not read: %s (see 'sporectl check')\n", strings.Join(damaged.IDs(), ", "))
		} else if err != nil {
			return err
		}
		for i := range spores {
			if sel.Matches(sporeFields(&spores[i])) {
				out = append(out, spores[i].ID)
			}
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("select spores (%s): %w", t, err)
	}
	if len(out) == 0 {
		fmt.Fprintf(f.IO.ErrOut, "no spores match %s\n", t)
		return nil, false, nil
	}
	return out, true, nil
}
