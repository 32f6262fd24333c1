package kube

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/sporectl/sporectl/state"
)

// PodSpecForTest lets tests build a pod exactly like the runtime's.
func (r *Runtime) PodSpecForTest(s state.Spore) (*corev1.Pod, error) { return r.opts.PodFor(s, "") }
