package cli

import (
	"net/url"

	"github.com/spf13/cobra"
	"github.com/sporectl/sporectl/internal/quote"
	"github.com/sporectl/sporectl/state"
)

// exactIDs accepts n spore ids (n < 0: at least one) and validates each
// against the id grammar before anything runs.
func sporeIDs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case n < 0 && len(args) == 0:
			return usageErrorf("%s needs at least one spore id", cmd.CommandPath())
		case n >= 0 && len(args) != n:
			return usageErrorf("%s takes %d spore id argument(s), got %d", cmd.CommandPath(), n, len(args))
		}
		for _, a := range args {
			if err := state.ValidateID(a); err != nil {
				return err
			}
		}
		return nil
	}
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
