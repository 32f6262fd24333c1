//go:build tools

// Package tools pins the node binaries (kubelet, kube-controller-manager,
// kube-scheduler, kube-proxy) the real-node tests run. A module of its own,
// so the kubelet's dependencies never touch sporectl's go.mod nor the
// API-server tools module.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
