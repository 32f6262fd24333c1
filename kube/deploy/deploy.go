// Package deploy holds the manifests that run sporectl on Kubernetes
// (a kustomize directory) and the Dockerfiles of its two images, embedded
// so the binary can print them and tests can check them against a real
// API server. It owns no behaviour.
package deploy

import "embed"

// Files are kustomization.yaml, the manifests it lists, images/ and
// examples/ (which the kustomization does not apply).
//
//go:embed *.yaml images examples
var Files embed.FS

// Manifests are the resources kustomization.yaml lists, in apply order.
var Manifests = []string{
	"namespace.yaml",
	"serviceaccount.yaml",
	"rbac.yaml",
	"serve.yaml",
	"reconcile.yaml",
	"networkpolicy.yaml",
}
