package kube

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge/agent"
	"github.com/sporectl/sporectl/state"
)

// A spore's empty spec fields come from the store's default spec, then
// the store's image, then the model's defaults and this runtime's image.
func TestOptionsFallBackToTheModelsDefaults(t *testing.T) {
	var none Options
	require.Equal(t, state.Spec{Image: DefaultImage, CPU: state.DefaultCPU, Memory: state.DefaultMemory, Storage: state.DefaultStorage}, none.spec(state.Spec{}))
	require.Equal(t, state.DefaultStorageClass, none.storageClass())
	require.Equal(t, agent.Default, none.agent())

	store := Options{Image: "img:store", StorageClass: "fast", Agent: agent.KindEcho,
		DefaultSpec: state.Spec{Image: "img:default-spec", Memory: "8Gi"}}
	require.Equal(t, state.Spec{Image: "img:default-spec", CPU: state.DefaultCPU, Memory: "8Gi", Storage: state.DefaultStorage}, store.spec(state.Spec{}))
	store.DefaultSpec.Image = ""
	require.Equal(t, state.Spec{Image: "img:store", CPU: "1", Memory: "8Gi", Storage: "1Gi"}, store.spec(state.Spec{CPU: "1", Storage: "1Gi"}))
	mine := state.Spec{Image: "img:mine", CPU: "1", Memory: "1Gi", Storage: "1Gi"}
	require.Equal(t, mine, store.spec(mine))
	require.Equal(t, "fast", store.storageClass())
	require.Equal(t, agent.KindEcho, store.agent())
}

func TestPodProxyURL(t *testing.T) {
	for _, tc := range []struct{ base, want string }{
		{"https://10.0.0.1:6443", "https://10.0.0.1:6443/api/v1/namespaces/spores/pods/spore-a:8080/proxy"},
		{"https://10.0.0.1:6443/", "https://10.0.0.1:6443/api/v1/namespaces/spores/pods/spore-a:8080/proxy"},
		{"https://rancher.example/k8s/clusters/c-1/", "https://rancher.example/k8s/clusters/c-1/api/v1/namespaces/spores/pods/spore-a:8080/proxy"},
	} {
		base, err := url.Parse(tc.base)
		require.NoError(t, err)
		before := *base
		require.Equal(t, tc.want, podProxyURL(base, "spores", ObjectName("a"), BridgePort))
		require.Equal(t, before, *base, "the base is not changed")
	}
}
