package cli

import (
	"net/url"
	"regexp"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/spf13/cobra"
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

// quantityLimits are the sane bounds of each resource flag: above zero,
// and no more than any node this tool could schedule on.
var quantityLimits = map[string]resource.Quantity{
	"cpu":     resource.MustParse("1024"),
	"memory":  resource.MustParse("16Ti"),
	"storage": resource.MustParse("1Pi"),
}

// validateQuantity checks a resource flag with Kubernetes' own quantity
// rules (what the API server would accept), above zero and within
// quantityLimits. changed says the flag was given: an empty value given
// on purpose is refused rather than silently meaning "no default".
func validateQuantity(flag, v string, changed bool) error {
	if v == "" {
		if changed {
			return usageErrorf("--%s is empty: give a quantity such as 2, 500m, 3Gi, or leave the flag out", flag)
		}
		return nil
	}
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return usageErrorf("invalid value %q for --%s: want a Kubernetes quantity such as 2, 500m, 3Gi", v, flag)
	}
	if q.Sign() <= 0 {
		return usageErrorf("invalid value %q for --%s: must be more than zero", v, flag)
	}
	if max := quantityLimits[flag]; q.Cmp(max) > 0 {
		return usageErrorf("invalid value %q for --%s: at most %s", v, flag, max.String())
	}
	return nil
}

// imageRE is the container image reference grammar (distribution's
// reference.ReferenceRegexp, anchored): [host[:port]/]path[:tag][@digest].
var imageRE = regexp.MustCompile(`^` +
	`(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*(?::[0-9]+)?/)?` +
	`[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*)*` +
	`(?::[\w][\w.-]{0,127})?` +
	`(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$`)

// maxImageLen is distribution's limit on a reference's name.
const maxImageLen = 255

func validateImage(v string, changed bool) error {
	switch {
	case v == "" && changed:
		return usageErrorf("--image is empty: give an image such as ghcr.io/org/spore:1.2, or leave the flag out")
	case v == "":
		return nil
	case len(v) > maxImageLen:
		return usageErrorf("invalid value for --image: %d characters; at most %d", len(v), maxImageLen)
	case !imageRE.MatchString(v):
		return usageErrorf("invalid value %q for --image: want an image reference such as ghcr.io/org/spore:1.2", v)
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
