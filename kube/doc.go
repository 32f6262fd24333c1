// Package kube is the Kubernetes runtime: each spore is a Pod, a
// PersistentVolumeClaim (its home) and a Secret (its tokens), all named
// spore-ID in one namespace. It implements reconcile.Runtime.
//
// It owns those three objects per spore and the mapping from Kubernetes
// status to reconcile's observed states. It remembers nothing between calls:
// every answer comes from the API server, and the whole fleet is observed
// with one LIST of pods and one LIST of claims.
//
// It must never delete, replace or patch an object that lacks sporectl's
// ownership marks (see Owned), never delete a claim unless a purge was
// asked for, never guess between two pods that claim the same spore, and
// never put a token in a log line or an error.
package kube
