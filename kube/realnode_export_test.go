package kube

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/sporectl/sporectl/reconcile"
)

// PodObservationForTest lets the real-node tests map a pod the real
// kubelet wrote exactly as the runtime's observation does.
func PodObservationForTest(id string, p *corev1.Pod) reconcile.PodObservation {
	return podObservation(id, p, time.Now())
}
