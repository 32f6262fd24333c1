package kube

import (
	"github.com/sporectl/sporectl/state"
)

// Defaults the issue fixes for a spore whose spec and store leave a field
// empty.
const (
	DefaultStorageClass = "local-path"
	DefaultStorage      = "5Gi"
	DefaultCPU          = "2"
	DefaultMemory       = "3Gi"
	DefaultImage        = "ghcr.io/sporectl/spore:latest"
	// BridgePort is where the bridge listens inside the pod.
	BridgePort = 8080
	// HomePath is where the claim is mounted.
	HomePath = "/home/spore"
	// SporeUID is the non-root user the spore image runs as.
	SporeUID = 1000
)

// Options are the runtime's defaults, mostly from the store's settings.
type Options struct {
	Namespace    string
	StorageClass string
	Image        string
	DefaultSpec  state.Spec
	// APIURL is how spores reach `sporectl serve`; passed to the bridge as
	// SPORECTL_API_URL. Empty means the Service of kube/deploy/serve.yaml
	// in the runtime's namespace.
	APIURL string
	// InCluster selects how bridges are reached (see Bridge).
	InCluster bool
	// BridgePort overrides the port Bridge dials (tests only; pods always
	// listen on BridgePort).
	BridgePort int
	// Agent is what each pod's bridge runs: "claude" (default) or "echo".
	Agent string
}

// OptionsFromSettings takes the kube fields of the store's settings. The
// namespace is the cluster connection's, which LoadCluster resolved with
// -n first, then the store's, then the kubeconfig context's.
func OptionsFromSettings(s state.Settings, c Cluster) Options {
	ns := c.Namespace
	if ns == "" {
		ns = s.Namespace
	}
	return Options{
		Namespace:    ns,
		StorageClass: s.StorageClass,
		Image:        s.Image,
		DefaultSpec:  s.DefaultSpec,
		InCluster:    c.InCluster,
		Agent:        s.Agent,
	}
}

// spec fills the spore's empty spec fields from the store's defaults and
// then from the issue's.
func (o Options) spec(s state.Spec) state.Spec {
	pick := func(vals ...string) string {
		for _, v := range vals {
			if v != "" {
				return v
			}
		}
		return ""
	}
	return state.Spec{
		Image:   pick(s.Image, o.DefaultSpec.Image, o.Image, DefaultImage),
		CPU:     pick(s.CPU, o.DefaultSpec.CPU, DefaultCPU),
		Memory:  pick(s.Memory, o.DefaultSpec.Memory, DefaultMemory),
		Storage: pick(s.Storage, o.DefaultSpec.Storage, DefaultStorage),
	}
}

func (o Options) storageClass() string {
	if o.StorageClass != "" {
		return o.StorageClass
	}
	return DefaultStorageClass
}

func (o Options) apiURL() string {
	if o.APIURL != "" {
		return o.APIURL
	}
	return "http://sporectl-api." + o.Namespace + ".svc"
}

func (o Options) agent() string {
	if o.Agent == "" {
		return "claude"
	}
	return o.Agent
}
