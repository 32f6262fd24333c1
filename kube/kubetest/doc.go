// Package kubetest runs a real etcd and kube-apiserver for tests of the
// kube runtime, and plays the part of a kubelet by moving pod status
// through the real API. It owns the processes it starts and stops every
// one of them when the test package ends.
//
// The binaries come from .ci/kube-tools.sh through SPORECTL_KUBE_BIN_DIR.
// When they are missing the tests skip, except when CI is set: then they
// fail, so a broken CI setup never passes by testing nothing.
//
// It must never touch a cluster it did not start: every Config it returns
// points at its own loopback API server.
package kubetest
