package kube

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// Labels and annotations that mark an object as sporectl's. The managed-by
// label is what every LIST selects on; the spore label says which spore an
// object belongs to, so a pod that was renamed or copied still counts
// against its spore and shows up as a duplicate rather than a stranger.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedByValue = "sporectl"
	LabelComponent = "app.kubernetes.io/component"
	ComponentSpore = "spore"
	LabelSpore     = "sporectl.dev/spore"
	LabelColony    = "sporectl.dev/colony"
	LabelRank      = "sporectl.dev/rank"
	LabelSwarm     = "sporectl.dev/swarm"
	// LabelEgress is a spore pod's colony's egress setting
	// (state.EgressAll or state.EgressNone): kube/deploy's
	// spores-internet NetworkPolicy selects the pods not labelled none.
	// A pod's labels are fixed when it is made, so a change of the
	// setting reaches a spore at its pod's next start.
	LabelEgress = "sporectl.dev/egress"

	// AnnotationOwner repeats the ownership in a field label selectors do
	// not reach, so a person copying labels onto a pod to make it show up
	// in a dashboard does not hand it to sporectl.
	AnnotationOwner = "sporectl.dev/owner"
	OwnerValue      = "sporectl"
)

// ObjectName is the name of every object of spore id.
func ObjectName(id string) string { return "spore-" + id }

// fleetLabels are the labels every spore object sporectl made carries.
var fleetLabels = labels.Set{LabelManagedBy: ManagedByValue, LabelComponent: ComponentSpore}

// fleetSelector selects every spore object sporectl made.
func fleetSelector() string {
	return labels.SelectorFromSet(fleetLabels).String()
}

// observeNamedMax is how many spores one LIST names in its selector; an
// observation of more lists the fleet (a selector of thousands of ids
// would pass the API server's URL limit).
const observeNamedMax = 64

// selectorFor selects the spore objects of ids: with up to
// observeNamedMax of them, fleetSelector and "sporectl.dev/spore in
// (ids…)", so the API server sends no other spore's objects; with none or
// more, the fleet's (the caller keeps the ids it wants).
func selectorFor(ids []string) (string, error) {
	if len(ids) == 0 || len(ids) > observeNamedMax {
		return fleetSelector(), nil
	}
	in, err := labels.NewRequirement(LabelSpore, selection.In, ids)
	if err != nil {
		return "", fmt.Errorf("select spores %v: %w", ids, err)
	}
	return labels.SelectorFromSet(fleetLabels).Add(*in).String(), nil
}

// Owned reports whether meta carries every ownership mark for spore id:
// the conventional name, the managed-by and spore labels, and the owner
// annotation. Anything less is someone else's object.
func Owned(meta v1.ObjectMeta, id string) bool {
	return meta.Name == ObjectName(id) &&
		meta.Labels[LabelManagedBy] == ManagedByValue &&
		meta.Labels[LabelComponent] == ComponentSpore &&
		meta.Labels[LabelSpore] == id &&
		meta.Annotations[AnnotationOwner] == OwnerValue
}
