package kube_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/reconcile"
)

// refusedCreds is a credential source whose store refused the token (a
// `sleep` won, or the transaction failed).
type refusedCreds struct{ err error }

func (c refusedCreds) Credentials(context.Context) (reconcile.Credentials, error) {
	return reconcile.Credentials{}, c.err
}

// Start asks for the credentials while it makes the claim; when the store
// refuses them, the start fails with that error and neither the Secret
// nor the pod exists: no pod runs with a token the store lacks. The claim
// (the home) may be there, as after any start that failed later.
func TestStartRefusedCredentialsMakeNoSecretOrPod(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	refused := errors.New("the store refused the token")
	err := e.rt.Start(ctx, spore("rho"), reconcile.Launch{Creds: refusedCreds{refused}})
	require.ErrorIs(t, err, refused)
	assert.ErrorContains(t, err, "start spore rho: credentials:")
	_, err = e.admin.CoreV1().Secrets(e.ns).Get(ctx, "spore-rho", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "no secret: %v", err)
	_, err = e.admin.CoreV1().Pods(e.ns).Get(ctx, "spore-rho", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "no pod: %v", err)

	// The next start with good credentials finds its claim and starts.
	require.NoError(t, e.rt.Start(ctx, spore("rho"), reconcile.Launch{Creds: creds("rho")}))
	_, err = e.admin.CoreV1().Pods(e.ns).Get(ctx, "spore-rho", metav1.GetOptions{})
	require.NoError(t, err)
}

// askedCreds gives its credentials and counts how often it was asked.
type askedCreds struct {
	c     reconcile.Credentials
	asked atomic.Int32
}

func (a *askedCreds) Credentials(context.Context) (reconcile.Credentials, error) {
	a.asked.Add(1)
	return a.c, nil
}

// A claim that is not ours stops the start even though the credentials,
// asked at the same time, were given (the store recorded their hash): no
// Secret, no pod.
func TestStartClaimNotOursFailsWithCredentialsGiven(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	foreign := foreignClaim("spore-sigma")
	_, err := e.admin.CoreV1().PersistentVolumeClaims(e.ns).Create(ctx, foreign, metav1.CreateOptions{})
	require.NoError(t, err)
	src := &askedCreds{c: creds("sigma")}
	err = e.rt.Start(ctx, spore("sigma"), reconcile.Launch{Creds: src})
	var notOwned *kube.NotOwnedError
	require.ErrorAs(t, err, &notOwned)
	assert.Equal(t, "PersistentVolumeClaim", notOwned.Kind)
	assert.EqualValues(t, 1, src.asked.Load(), "the credentials were asked while the claim was made")
	_, err = e.admin.CoreV1().Secrets(e.ns).Get(ctx, "spore-sigma", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "no secret: %v", err)
	_, err = e.admin.CoreV1().Pods(e.ns).Get(ctx, "spore-sigma", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "no pod: %v", err)
}

// foreignClaim is a claim of that name made by someone else: no label of
// sporectl's.
func foreignClaim(name string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}
