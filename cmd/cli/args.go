package cli

import (
	"net/url"
	"strings"

	"github.com/spf13/cobra"
	"github.com/sporectl/sporectl/internal/quote"
	"github.com/sporectl/sporectl/state"
)

// sporeIDs accepts n spore ids (n < 0: at least one) and checks each
// before anything runs. It is the one place a spore id on the command
// line is read: each argument may be NAME or kubectl's TYPE/NAME with the
// type spore (what -o name prints, so `list -o name | xargs sporectl
// sleep` works), and is rewritten in place to the bare id. Cobra hands
// RunE the slice it validated, so every command that validates through
// here receives bare ids (TestEverySporeIDCommandTakesTypeSlashName
// walks the command tree to keep it so).
//
// A command with -l/--selector or --all (addTargetFlags) takes either ids
// or a selection, never both, as kubectl refuses a name with -l.
func sporeIDs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if selecting(cmd) {
			if len(args) > 0 {
				return usageErrorf("%s: give spore ids or a selection (-l/--selector, --all), not both", cmd.CommandPath())
			}
			return checkSelectorFlag(cmd)
		}
		switch {
		case n < 0 && len(args) == 0:
			return usageErrorf("%s needs at least one spore id%s", cmd.CommandPath(), orSelection(cmd))
		case n >= 0 && len(args) != n:
			return usageErrorf("%s takes %d spore id argument(s), got %d", cmd.CommandPath(), n, len(args))
		}
		for i, a := range args {
			id, err := sporeRef(a)
			if err != nil {
				return err
			}
			args[i] = id
		}
		return nil
	}
}

// sporeRef reads one spore id: NAME or spore/NAME. Any other TYPE/ is a
// usage error naming it.
func sporeRef(a string) (string, error) {
	if kind, name, ok := strings.Cut(a, "/"); ok {
		if kind != "spore" {
			return "", usageErrorf("%s: sporectl names spores (spore/NAME)", quote.Value(a))
		}
		a = name
	}
	if err := state.ValidateID(a); err != nil {
		return "", err
	}
	return a, nil
}

// validateQuantity checks a resource flag with the spec's grammar
// (state.CheckQuantity). changed says the flag was given: an empty value
// given on purpose is refused rather than silently meaning "no default".
func validateQuantity(flag, v string, changed bool) error {
	if v == "" {
		if changed {
			return usageErrorf("--%s is empty: give a quantity such as 2, 500m, 3Gi, or leave the flag out", flag)
		}
		return nil
	}
	if err := state.CheckQuantity(flag, v); err != nil {
		return usageErrorf("invalid value %s for --%s: %v", quote.Value(v), flag, err)
	}
	return nil
}

func validateImage(v string, changed bool) error {
	switch {
	case v == "" && changed:
		return usageErrorf("--image is empty: give an image such as ghcr.io/org/spore:1.2, or leave the flag out")
	case v == "":
		return nil
	case len(v) > state.MaxImageLen:
		return usageErrorf("invalid value for --image: %d characters; at most %d", len(v), state.MaxImageLen)
	}
	if err := state.CheckImage(v); err != nil {
		return usageErrorf("invalid value %s for --image: %v", quote.Value(v), err)
	}
	return nil
}

// validateAPIURL accepts an http or https URL with a host and nothing
// after the path (no query, no fragment, no user info: a token never goes
// in a URL).
func validateAPIURL(v string, changed bool) error {
	if v == "" {
		if changed {
			return usageErrorf("--api-url is empty: give serve's address such as http://127.0.0.1:7070, or leave the flag out")
		}
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return usageErrorf("invalid value for --api-url: want http(s)://host:port, without user, query or fragment")
	}
	return nil
}
