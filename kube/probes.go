package kube

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The spore pod's readiness probe asks /readyz, not /healthz: a bridge
// that cannot append to its log still serves, and the pass must reach it
// to learn that (BridgeUnhealthy).
const probePath = "/readyz"

// readinessPeriod is a second, the kubelet's shortest. Besides one run
// as the container starts, the kubelet asks a probe only on its period's
// ticks: when that first run comes before the bridge listens, a woken
// pod is Ready at the next tick, with 5 s up to 5 s later, and the pass,
// which asks only a Ready pod's bridge, waited as long. A startup probe
// every second in front of a 5 s readiness probe did worse (Ready 1.28 s
// after the bridge answered, against 0.55 s): the readiness run the
// kubelet makes on the startup probe's success is skipped while its
// status does not yet say the container started, and the pod waits for
// the next 5 s tick (docs/performance.md "Wake on the real node, by
// stage"). The cost is one GET of /readyz a second per spore, answered
// from memory.
const readinessPeriod = 1

// readinessFailures keeps a bridge that stops answering Ready for 15 s,
// as with 3 failures 5 s apart before: a bridge busy for a moment is not
// taken out of the pass.
const readinessFailures = 15

// readinessProbe says whether the bridge serves.
func readinessProbe() *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: probePath, Port: intstr.FromInt32(BridgePort),
		}},
		PeriodSeconds:    readinessPeriod,
		FailureThreshold: readinessFailures,
	}
}
