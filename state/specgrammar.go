package state

import (
	"errors"
	"fmt"
	"regexp"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sporectl/sporectl/internal/lazy"
)

// The grammar of a spec's values, shared by every way of giving one
// (create's flags, apply's files): each check returns the reason a value
// is refused, for the caller to put after where it was given ("invalid
// value "x" for --cpu: " or "colony.yaml:7: spec.spores[0].resources.cpu: ").
// Stores do not check it: a record written before a bound changed still
// reads back.

// QuantityLimits are the bounds of each resource: above zero, and no more
// than any node this tool could schedule on. They are parsed on first use.
var QuantityLimits = lazy.New("state.QuantityLimits", func() map[string]resource.Quantity {
	return map[string]resource.Quantity{
		"cpu":     resource.MustParse("1024"),
		"memory":  resource.MustParse("16Ti"),
		"storage": resource.MustParse("1Pi"),
	}
})

// CheckQuantity checks v, a value of resource ("cpu", "memory" or
// "storage"), with Kubernetes' own quantity rules (what the API server
// would accept), above zero and within QuantityLimits.
func CheckQuantity(resourceName, v string) error {
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return errors.New("want a Kubernetes quantity such as 2, 500m, 3Gi")
	}
	if q.Sign() <= 0 {
		return errors.New("must be more than zero")
	}
	if max, ok := QuantityLimits()[resourceName]; ok && q.Cmp(max) > 0 {
		return fmt.Errorf("at most %s", max.String())
	}
	return nil
}

// imageRE is the container image reference grammar (distribution's
// reference.ReferenceRegexp, anchored): [host[:port]/]path[:tag][@digest],
// compiled on first use.
var imageRE = lazy.New("state.imageRE", func() *regexp.Regexp {
	return regexp.MustCompile(`^` +
		`(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))*(?::[0-9]+)?/)?` +
		`[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*)*` +
		`(?::[\w][\w.-]{0,127})?` +
		`(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$`)
})

// MaxImageLen is distribution's limit on a reference's name.
const MaxImageLen = 255

// CheckImage checks v as a container image reference.
func CheckImage(v string) error {
	switch {
	case len(v) > MaxImageLen:
		return fmt.Errorf("%d characters; at most %d", len(v), MaxImageLen)
	case !imageRE().MatchString(v):
		return errors.New("want an image reference such as ghcr.io/org/spore:1.2")
	}
	return nil
}
