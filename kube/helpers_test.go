package kube_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

func spore(id string) state.Spore {
	now := time.Now()
	return state.Spore{Wish: state.Wish{ID: id, Colony: "moss", Rank: state.RankSpore, Desired: state.Running, Created: now, Updated: now}}
}

// creds makes distinct tokens per spore so a mix-up would show.
func creds(id string) reconcile.Credentials {
	return reconcile.Credentials{APIToken: "spt_api_" + id, BridgeToken: "brt_" + id}
}

func (e *env) start(t testing.TB, ids ...string) {
	t.Helper()
	for _, id := range ids {
		require.NoError(t, e.rt.Start(t.Context(), spore(id), reconcile.Launch{Creds: creds(id)}))
	}
}

func (e *env) observe(t testing.TB) map[string]reconcile.PodObservation {
	t.Helper()
	obs, err := e.rt.Observe(t.Context(), nil)
	require.NoError(t, err)
	return obs.Spores
}

func runtimeFromUnstructured(u *unstructured.Unstructured, into any) error {
	return k8sruntime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}
