package kube

import (
	"github.com/sporectl/sporectl/bridge/agent"
	"github.com/sporectl/sporectl/state"
)

const (
	// DefaultImage is the spore image when neither the spore, the store's
	// default spec nor its settings name one. The other spec defaults are
	// the store's (state.DefaultSpec).
	DefaultImage = "ghcr.io/sporectl/spore:latest"
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
	// ColonyPods are the colonies' pod options (state.ColonySettings
	// Pod), merged between the store's default and a spore's own.
	ColonyPods map[string]*state.PodOptions
	// ColonyEgress are the colonies' egress settings
	// (state.ColonySettings Egress), by colony; a colony not in it has
	// the default, state.EgressAll.
	ColonyEgress map[string]string
	// APIURL is how spores reach `sporectl serve`; passed to the bridge as
	// SPORECTL_API_URL. Empty means the Service of kube/deploy/serve.yaml
	// in the runtime's namespace.
	APIURL string
	// InCluster selects how bridges are reached (see Bridge).
	InCluster bool
	// BridgePort overrides the port Bridge dials (tests only; pods always
	// listen on BridgePort).
	BridgePort int
	// Agent is what each pod's bridge runs: a kind of bridge/agent,
	// agent.Default when empty.
	Agent string
	// Gateway is the store's model gateway (state.Settings.Gateway): on,
	// spore pods reach the model through serve's /model with their own
	// token (SPORECTL_MODEL_URL) and never get the ModelSecret; off
	// (direct mode), every spore pod gets the ModelSecret's keys.
	Gateway bool
}

// OptionsFromSettings takes the kube fields of the store's settings. The
// namespace is the cluster connection's, which LoadCluster resolved with
// -n first, then the store's, then the kubeconfig context's.
func OptionsFromSettings(s state.Settings, c Cluster) Options {
	ns := c.Namespace
	if ns == "" {
		ns = s.Namespace
	}
	var pods map[string]*state.PodOptions
	var egress map[string]string
	if s.Colonies != nil {
		for name, cs := range *s.Colonies {
			if !cs.Pod.IsZero() {
				if pods == nil {
					pods = map[string]*state.PodOptions{}
				}
				pods[name] = cs.Pod
			}
			if cs.Egress != "" {
				if egress == nil {
					egress = map[string]string{}
				}
				egress[name] = cs.Egress
			}
		}
	}
	return Options{
		ColonyPods:   pods,
		ColonyEgress: egress,
		Namespace:    ns,
		StorageClass: s.StorageClass,
		Image:        s.Image,
		DefaultSpec:  s.DefaultSpec,
		InCluster:    c.InCluster,
		Agent:        s.Agent,
		APIURL:       s.APIURL,
		Gateway:      s.Gateway(),
	}
}

// spec fills the spore's empty spec fields from the store's defaults and
// then from state's (for a store whose settings lack a field).
func (o Options) spec(s state.Spec) state.Spec {
	return s.Or(o.DefaultSpec).Or(state.Spec{Image: o.Image}).Or(state.DefaultSpec()).Or(state.Spec{Image: DefaultImage})
}

// egress is colony's egress setting, state.EgressAll unless it says
// otherwise.
func (o Options) egress(colony string) string {
	if e := o.ColonyEgress[colony]; e != "" {
		return e
	}
	return state.EgressAll
}

func (o Options) storageClass() string {
	if o.StorageClass != "" {
		return o.StorageClass
	}
	return state.DefaultStorageClass
}

func (o Options) apiURL() string {
	if o.APIURL != "" {
		return o.APIURL
	}
	return "http://sporectl-api." + o.Namespace + ".svc"
}

func (o Options) agent() string {
	if o.Agent == "" {
		return agent.Default
	}
	return o.Agent
}
