package kube

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sporectl/sporectl/reconcile"
)

// Observe lists every spore pod and claim in the namespace, one LIST each,
// whatever the size of the fleet. A spore with a pod gets that pod's
// state; one with only a claim (asleep, or its pod gone) is Absent. Every
// marked object is reported, including those whose spore the store no
// longer has: the caller, who knows the store, calls them orphans.
//
// In the cluster each pod's IP is kept (PodObservation.IP): the pass's
// BridgeEndpoints dials it instead of listing the pods again.
//
// With ids, the two LISTs select those spores' objects alone (up to
// observeNamedMax of them; more list the fleet), and only they are
// reported: a command about one spore reads its pod and claim, not the
// fleet's.
func (r *Runtime) Observe(ctx context.Context, ids []string) (reconcile.FleetObservation, error) {
	sel, err := selectorFor(ids)
	if err != nil {
		return reconcile.FleetObservation{}, fmt.Errorf("observe: %w", err)
	}
	var pods *corev1.PodList
	err = retryTransient(ctx, func() (err error) {
		pods, err = r.core.pods().list(ctx, sel)
		return err
	})
	if err != nil {
		return reconcile.FleetObservation{}, fmt.Errorf("observe: list pods in %s: %w", r.opts.Namespace, err)
	}
	var claims *corev1.PersistentVolumeClaimList
	err = retryTransient(ctx, func() (err error) {
		claims, err = r.core.claims().list(ctx, sel)
		return err
	})
	if err != nil {
		return reconcile.FleetObservation{}, fmt.Errorf("observe: list claims in %s: %w", r.opts.Namespace, err)
	}
	out := fleet(pods.Items, claims.Items, r.opts.InCluster, time.Now())
	if len(ids) > 0 {
		want := make(map[string]bool, len(ids))
		for _, id := range ids {
			want[id] = true
		}
		maps.DeleteFunc(out.Spores, func(id string, _ reconcile.PodObservation) bool { return !want[id] })
	}
	return out, nil
}

// fleet folds the two lists, read at now, into one observation per
// spore. direct (in the cluster, where bridges are dialled at their
// pods' addresses) keeps each pod's IP in the observation, for
// BridgeEndpoints: the pass lists the pods once.
func fleet(pods []corev1.Pod, claims []corev1.PersistentVolumeClaim, direct bool, now time.Time) reconcile.FleetObservation {
	byID := map[string][]*corev1.Pod{}
	for i := range pods {
		p := &pods[i]
		if id := p.Labels[LabelSpore]; id != "" {
			byID[id] = append(byID[id], p)
		}
	}
	out := reconcile.FleetObservation{Spores: make(map[string]reconcile.PodObservation, len(byID)+len(claims))}
	for id, ps := range byID {
		p := primary(id, ps)
		o := podObservation(id, p, now)
		o.Count = len(ps)
		if direct {
			o.IP = p.Status.PodIP
		}
		out.Spores[id] = o
	}
	for i := range claims {
		c := &claims[i]
		id := c.Labels[LabelSpore]
		if id == "" {
			continue
		}
		if _, ok := out.Spores[id]; ok {
			continue
		}
		out.Spores[id] = reconcile.PodObservation{ID: id, State: reconcile.PodAbsent, Owned: Owned(c.ObjectMeta, id)}
	}
	return out
}

// primary picks which of a spore's pods to describe: the one with the
// spore's own name if there is one, else the first by name, so the answer
// is the same on every run. With more than one pod, Count says so and
// reconcile reports it; nothing here chooses a pod to act on.
func primary(id string, ps []*corev1.Pod) *corev1.Pod {
	sort.Slice(ps, func(i, j int) bool { return ps[i].Name < ps[j].Name })
	for _, p := range ps {
		if p.Name == ObjectName(id) {
			return p
		}
	}
	return ps[0]
}
