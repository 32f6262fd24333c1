package podgrammar

import (
	"slices"
	"strings"
)

// ReservedPrefix and the app.kubernetes.io keys below are the label and
// annotation keys sporectl sets: on a spore's objects, where they tell it
// what it owns (kube/labels.go), and on its own workloads (kube/deploy),
// whose NetworkPolicies select on them. A pod option may not set them:
// letting one through would hand the pod to someone else, or another
// spore's pod to sporectl, or give a spore the network reach of serve
// (app.kubernetes.io/name=sporectl may reach every bridge).
const ReservedPrefix = "sporectl.dev/"

var reservedKeys = []string{"app.kubernetes.io/managed-by", "app.kubernetes.io/component", "app.kubernetes.io/name"}

// Reserved reports whether k is a label or annotation key that sporectl
// sets itself.
func Reserved(k string) bool {
	return strings.HasPrefix(k, ReservedPrefix) || slices.Contains(reservedKeys, k)
}

// ReservedReason is why a pod option may not set a key Reserved reports
// (written out, so nothing is built at init; TestReservedReason holds it
// to reservedKeys).
const ReservedReason = "is a key sporectl sets itself (" + ReservedPrefix + "*, app.kubernetes.io/managed-by, app.kubernetes.io/component, app.kubernetes.io/name)"

// Secrets a pod option may not name: the spores' own ("spore-ID", which
// hold their tokens: a spore would be handed another's) and sporectl's
// ("sporectl-model", which every pod gets already, and "sporectl-store",
// which holds the store's URL and credentials: a spore reaches the store
// only through serve).
const (
	SporeSecretPrefix    = "spore-"
	SporectlSecretPrefix = "sporectl-"
)

// SecretName is why name may not be given to a pod's environment: not a
// DNS-1123 subdomain, a spore's own Secret (SporeSecretPrefix) or one of
// sporectl's (SporectlSecretPrefix).
func SecretName(name string) string {
	if r := DNSSubdomain(name); r != "" {
		return r
	}
	switch {
	case strings.HasPrefix(name, SporeSecretPrefix):
		return "names a spore's own Secret (" + SporeSecretPrefix + "*), which holds its tokens"
	case strings.HasPrefix(name, SporectlSecretPrefix):
		return "names one of sporectl's Secrets (" + SporectlSecretPrefix + "*: the model's, which every pod gets already, and the store's credentials)"
	}
	return ""
}
