package state

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDefaultSpec(t *testing.T) {
	require.Equal(t, Spec{CPU: "2", Memory: "3Gi", Storage: "5Gi"}, DefaultSpec(), "the issue's defaults; no image")
	require.Equal(t, "local-path", DefaultStorageClass)
}

// WithDefaults fills only what the spore's spec leaves empty, the image
// from Settings.Image (never from DefaultSpec.Image) and the rest from
// DefaultSpec; it never falls back to the package's constants.
func TestSpecWithDefaults(t *testing.T) {
	settings := Settings{Image: "img:store", DefaultSpec: Spec{Image: "img:ignored", CPU: "4", Memory: "8Gi", Storage: "20Gi"}}
	for _, tc := range []struct {
		name     string
		spec     Spec
		settings Settings
		want     Spec
	}{
		{"empty spec", Spec{}, settings, Spec{Image: "img:store", CPU: "4", Memory: "8Gi", Storage: "20Gi"}},
		{"spec wins", Spec{Image: "img:mine", CPU: "500m", Memory: "1Gi", Storage: "1Gi"}, settings, Spec{Image: "img:mine", CPU: "500m", Memory: "1Gi", Storage: "1Gi"}},
		{"partly set", Spec{Memory: "1Gi"}, settings, Spec{Image: "img:store", CPU: "4", Memory: "1Gi", Storage: "20Gi"}},
		{"store without defaults", Spec{CPU: "1"}, Settings{}, Spec{CPU: "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.spec.WithDefaults(tc.settings))
		})
	}
}

func TestSpecOr(t *testing.T) {
	a := Spec{Image: "a", Memory: "1Gi"}
	b := Spec{Image: "b", CPU: "2", Memory: "2Gi", Storage: "5Gi"}
	require.Equal(t, Spec{Image: "a", CPU: "2", Memory: "1Gi", Storage: "5Gi"}, a.Or(b))
	require.Equal(t, b, Spec{}.Or(b))
	require.Equal(t, a, a.Or(Spec{}))
}
