package cli

import (
	"regexp"

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

// quantityRE is the subset of Kubernetes quantities a spore spec uses.
var quantityRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$`)

func validateQuantity(flag, v string) error {
	if v == "" || quantityRE.MatchString(v) {
		return nil
	}
	return usageErrorf("invalid value %q for --%s: want a Kubernetes quantity such as 2, 500m, 3Gi", v, flag)
}
