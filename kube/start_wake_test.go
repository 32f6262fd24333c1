package kube_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/kube/kubetest"
	"github.com/sporectl/sporectl/reconcile"
)

// asleepCreds are credentials whose source says the spore ran before, as
// the pass's do for a spore with a recorded token.
type asleepCreds struct{ c reconcile.Credentials }

func (a asleepCreds) Credentials(context.Context) (reconcile.Credentials, error) { return a.c, nil }
func (asleepCreds) RanBefore() bool                                              { return true }

// A wake costs four requests (read the pod, read the claim, patch the
// Secret, create the pod), down from seven create-first; a first start
// still costs four (read the pod, three creates). The wake mounts the
// same claim and its Secret holds the new tokens.
func TestStartRequestsOfAWakeAndAFirstStart(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	cfg, counter := kubetest.Counting(e.saCfg)
	rt, err := kube.New(cfg, kube.Options{Namespace: e.ns})
	require.NoError(t, err)

	require.NoError(t, rt.Start(ctx, spore("tau"), reconcile.Launch{Creds: creds("tau")}))
	assert.EqualValues(t, 4, counter.Requests(), "requests of a first start")
	home, err := e.admin.CoreV1().PersistentVolumeClaims(e.ns).Get(ctx, "spore-tau", metav1.GetOptions{})
	require.NoError(t, err)
	require.NoError(t, rt.Stop(ctx, "tau"))

	counter.Reset()
	woken := reconcile.Credentials{APIToken: "spt_api_tau_2", BridgeToken: "brt_tau_2"}
	require.NoError(t, rt.Start(ctx, spore("tau"), reconcile.Launch{Creds: asleepCreds{woken}}))
	assert.EqualValues(t, 4, counter.Requests(), "requests of a wake")

	sec, err := e.admin.CoreV1().Secrets(e.ns).Get(ctx, "spore-tau", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, woken.APIToken, string(sec.Data[kube.SecretKeyAPIToken]))
	assert.Equal(t, woken.BridgeToken, string(sec.Data[kube.SecretKeyBridgeToken]))
	assert.True(t, kube.Owned(sec.ObjectMeta, "tau"))
	again, err := e.admin.CoreV1().PersistentVolumeClaims(e.ns).Get(ctx, "spore-tau", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, home.UID, again.UID, "the wake made a new home")
	_, err = e.admin.CoreV1().Pods(e.ns).Get(ctx, "spore-tau", metav1.GetOptions{})
	require.NoError(t, err)
}

// A wake guesses what is there; whatever is, it ends as a start would:
// what is missing is made, what is not ours stops it untouched.
func TestStartOfASporeThatRanBefore(t *testing.T) {
	cases := map[string]struct {
		// before makes the cluster as the wake finds it.
		before  func(t *testing.T, e *env, id string)
		notOurs string // the kind refused, "" for a start that succeeds
	}{
		"nothing there (created asleep, never started)": {
			before: func(*testing.T, *env, string) {},
		},
		"claim kept, Secret deleted": {
			before: func(t *testing.T, e *env, id string) {
				e.start(t, id)
				require.NoError(t, e.rt.Delete(t.Context(), id, false))
			},
		},
		"Secret of someone else's": {
			before: func(t *testing.T, e *env, id string) {
				e.start(t, id)
				require.NoError(t, e.rt.Stop(t.Context(), id))
				replaceSecret(t, e, id, nil)
			},
			notOurs: "Secret",
		},
		"Secret labelled for another spore": {
			before: func(t *testing.T, e *env, id string) {
				e.start(t, id)
				require.NoError(t, e.rt.Stop(t.Context(), id))
				sec, err := e.admin.CoreV1().Secrets(e.ns).Get(t.Context(), kube.ObjectName(id), metav1.GetOptions{})
				require.NoError(t, err)
				sec.Labels[kube.LabelSpore] = "other"
				replaceSecret(t, e, id, sec)
			},
			notOurs: "Secret",
		},
		"claim of someone else's": {
			before: func(t *testing.T, e *env, id string) {
				_, err := e.admin.CoreV1().PersistentVolumeClaims(e.ns).Create(t.Context(), foreignClaim(kube.ObjectName(id)), metav1.CreateOptions{})
				require.NoError(t, err)
			},
			notOurs: "PersistentVolumeClaim",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			ctx := t.Context()
			const id = "upsilon"
			tc.before(t, e, id)
			var secretBefore map[string][]byte
			if sec, err := e.admin.CoreV1().Secrets(e.ns).Get(ctx, kube.ObjectName(id), metav1.GetOptions{}); err == nil {
				secretBefore = sec.Data
			}
			woken := reconcile.Credentials{APIToken: "spt_api_woken", BridgeToken: "brt_woken"}
			err := e.rt.Start(ctx, spore(id), reconcile.Launch{Creds: asleepCreds{woken}})
			_, podErr := e.admin.CoreV1().Pods(e.ns).Get(ctx, kube.ObjectName(id), metav1.GetOptions{})
			sec, secErr := e.admin.CoreV1().Secrets(e.ns).Get(ctx, kube.ObjectName(id), metav1.GetOptions{})
			if tc.notOurs != "" {
				var notOwned *kube.NotOwnedError
				require.ErrorAs(t, err, &notOwned)
				assert.Equal(t, tc.notOurs, notOwned.Kind)
				assert.True(t, apierrors.IsNotFound(podErr), "a pod: %v", podErr)
				if secErr == nil {
					assert.Equal(t, secretBefore, sec.Data, "a Secret not ours was changed")
				}
				return
			}
			require.NoError(t, err)
			require.NoError(t, podErr)
			require.NoError(t, secErr)
			assert.Equal(t, woken.APIToken, string(sec.Data[kube.SecretKeyAPIToken]))
			_, err = e.admin.CoreV1().PersistentVolumeClaims(e.ns).Get(ctx, kube.ObjectName(id), metav1.GetOptions{})
			require.NoError(t, err)
		})
	}
}

// replaceSecret puts sec (or, when nil, a Secret of someone else's with
// other data) in place of spore id's Secret.
func replaceSecret(t *testing.T, e *env, id string, sec *corev1.Secret) {
	t.Helper()
	ctx := t.Context()
	name := kube.ObjectName(id)
	require.NoError(t, e.admin.CoreV1().Secrets(e.ns).Delete(ctx, name, metav1.DeleteOptions{}))
	if sec == nil {
		sec = &corev1.Secret{Data: map[string][]byte{"theirs": []byte("keep me")}}
	}
	sec.ObjectMeta = metav1.ObjectMeta{Name: name, Labels: sec.Labels, Annotations: sec.Annotations}
	_, err := e.admin.CoreV1().Secrets(e.ns).Create(ctx, sec, metav1.CreateOptions{})
	require.NoError(t, err)
}

// A wake's Secret patch is retried like any request when the server is
// briefly unable, and a Role that does not grant patch (one applied
// before sporectl patched) falls back to the read and update: the wake
// works, and the Secret holds the new tokens either way.
func TestWakeSecretPatchFaults(t *testing.T) {
	cases := []struct {
		name     string
		f        *faulty
		wantHits int
	}{
		{"503 on the patch", &faulty{method: "PATCH", suffix: "/secrets/spore-phi-0", left: 1, mode: "status:503:ServiceUnavailable"}, 2},
		{"403: the Role grants no patch", &faulty{method: "PATCH", suffix: "/secrets/spore-phi-1", left: -1, mode: "status:403:Forbidden"}, 1},
	}
	e := newEnv(t)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := fmt.Sprintf("phi-%d", i)
			e.start(t, id)
			require.NoError(t, e.rt.Stop(t.Context(), id))
			rt := e.faultyRuntime(t, c.f)
			woken := reconcile.Credentials{APIToken: "spt_api_" + id + "_2", BridgeToken: "brt_" + id + "_2"}
			require.NoError(t, rt.Start(t.Context(), spore(id), reconcile.Launch{Creds: asleepCreds{woken}}))
			assert.Equal(t, c.wantHits, c.f.hits, "requests that reached the fault")
			sec, err := e.admin.CoreV1().Secrets(e.ns).Get(t.Context(), kube.ObjectName(id), metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, woken.BridgeToken, string(sec.Data[kube.SecretKeyBridgeToken]))
			_, err = e.admin.CoreV1().Pods(e.ns).Get(t.Context(), kube.ObjectName(id), metav1.GetOptions{})
			require.NoError(t, err)
		})
	}
}
