package kube

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// ConfigFlags are kubectl's connection inputs. Empty fields mean "as
// kubectl would decide": KUBECONFIG or ~/.kube/config, their current
// context, and in-cluster configuration when there is no kubeconfig at all.
type ConfigFlags struct {
	Kubeconfig string // --kubeconfig
	Context    string // --context
	Namespace  string // -n/--namespace
	// DefaultNamespace is used when neither -n nor the context names one
	// (the store's settings, typically).
	DefaultNamespace string
}

// Cluster is a resolved connection.
type Cluster struct {
	Config    *rest.Config
	Namespace string
	// InCluster is true when the credentials came from the pod's service
	// account; it decides how bridges are reached (see Bridge).
	InCluster bool
}

// serviceAccountNamespaceFile is where a pod finds its own namespace.
var serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// LoadCluster builds a rest.Config from flags the way kubectl does:
// --kubeconfig wins over KUBECONFIG, which wins over ~/.kube/config;
// --context picks a context; with no kubeconfig at all and no flags, the
// in-cluster service account is used.
func LoadCluster(flags ConfigFlags) (Cluster, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = flags.Kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: flags.Context}
	overrides.Context.Namespace = flags.Namespace
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)

	raw, err := cc.RawConfig()
	if err != nil {
		return Cluster{}, fmt.Errorf("load kubeconfig: %w", err)
	}
	if len(raw.Contexts) == 0 && flags.Kubeconfig == "" && flags.Context == "" {
		cfg, err := rest.InClusterConfig()
		if err == nil {
			return finish(Cluster{Config: cfg, InCluster: true, Namespace: inClusterNamespace(flags)}), nil
		}
		if !errors.Is(err, rest.ErrNotInCluster) {
			return Cluster{}, fmt.Errorf("load in-cluster config: %w", err)
		}
		return Cluster{}, errors.New("no kubeconfig found (set KUBECONFIG or --kubeconfig) and not running in a cluster")
	}

	cfg, err := cc.ClientConfig()
	if err != nil {
		return Cluster{}, fmt.Errorf("build client config from kubeconfig: %w", err)
	}
	ns, explicit, err := cc.Namespace()
	if err != nil {
		return Cluster{}, fmt.Errorf("resolve namespace: %w", err)
	}
	// The store names its colony's namespace; a context's namespace is a
	// person's default and must not move the colony (kubens would make
	// every spore look Dead and wake them in the wrong place).
	if !explicit && flags.DefaultNamespace != "" {
		ns = flags.DefaultNamespace
	}
	return finish(Cluster{Config: cfg, Namespace: ns}), nil
}

func inClusterNamespace(flags ConfigFlags) string {
	if flags.Namespace != "" {
		return flags.Namespace
	}
	if flags.DefaultNamespace != "" {
		return flags.DefaultNamespace
	}
	if b, err := os.ReadFile(serviceAccountNamespaceFile); err == nil {
		if ns := strings.TrimSpace(string(b)); ns != "" {
			return ns
		}
	}
	return "default"
}

func finish(c Cluster) Cluster {
	if c.Config.UserAgent == "" {
		c.Config.UserAgent = "sporectl"
	}
	return c
}
