// Package podgrammar is Kubernetes' grammar of what a spore's pod options
// may say (docs/runtimes.md "Pod options"): label keys and values, DNS-1123
// subdomains (a runtime class's and a Secret's name), tolerations, and
// what sporectl keeps for itself on a pod (the label and annotation keys
// the kube runtime marks its objects with, the Secrets it makes). Each
// check answers why a value is not valid, "" when it is, and names no
// field: the caller knows where the value sits.
//
// It is the kube runtime's grammar, beside it, but a package of its own
// that imports nothing of this module (TestImportsNothing): the stores
// refuse a record with a bad pod option on every write and read
// (state.PodOptions.Validate calls it), and state cannot import the
// runtime, which imports state. It must never import Kubernetes' own
// libraries: every read of a record checks it, so it is written out, not
// built from regular expressions; kube's tests check it against
// apimachinery's validation (TestPodOptionsGrammarIsKubernetes).
package podgrammar
