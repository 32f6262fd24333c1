package kube_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/kube/kubetest"
	"github.com/sporectl/sporectl/state"
)

// The [arch]'s ClusterRole covers every resource the API server serves
// but secrets: each core resource but secrets by name (no subresource),
// and every other built-in group whole. A Kubernetes release that adds a
// core resource or a group fails here until rbac.yaml says what the
// [arch] gets of it.
func TestArchClusterRoleCoversTheAPIButSecrets(t *testing.T) {
	srv := kubetest.Shared(t)
	var role *rbacv1.ClusterRole
	for _, o := range renderDeploy(t) {
		if o.GetKind() == "ClusterRole" && o.GetName() == kube.ArchServiceAccount {
			role = &rbacv1.ClusterRole{}
			require.NoError(t, runtimeFromUnstructured(o, role))
		}
	}
	require.NotNil(t, role, "kube/deploy has the [arch]'s ClusterRole")
	core, groups := map[string]bool{}, map[string]bool{}
	for _, r := range role.Rules {
		assert.Equal(t, []string{"get", "list", "watch"}, r.Verbs, "read-only: %v", r)
		for _, g := range r.APIGroups {
			require.NotEqual(t, "*", g, `apiGroups "*" includes the core group, and with it secrets`)
			if g == "" {
				for _, res := range r.Resources {
					core[res] = true
				}
				continue
			}
			assert.Equal(t, []string{"*"}, r.Resources, "group %s is granted whole", g)
			groups[g] = true
		}
	}
	assert.False(t, core["secrets"], "secrets are not read")
	assert.False(t, core["*"], "no wildcard in the core group")
	for res := range core {
		assert.NotContains(t, res, "/", "no core subresource (pods/exec, nodes/proxy, serviceaccounts/token, pods/log)")
	}

	disc, err := kubernetes.NewForConfig(srv.Config)
	require.NoError(t, err)
	_, lists, err := disc.Discovery().ServerGroupsAndResources()
	require.NoError(t, err)
	served := map[string]bool{}
	for _, l := range lists {
		gv, err := schemaGroup(l.GroupVersion)
		require.NoError(t, err)
		if gv != "" {
			served[gv] = true
			assert.True(t, groups[gv], "the API server serves group %s: rbac.yaml must grant or name it", gv)
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || r.Name == "secrets" {
				continue
			}
			assert.True(t, core[r.Name], "core resource %s is served: the [arch] must read it", r.Name)
		}
	}
	for g := range groups {
		if g == "metrics.k8s.io" {
			continue // served only where metrics-server runs
		}
		assert.True(t, served[g], "rbac.yaml grants group %s, which the API server does not serve", g)
	}
}

func schemaGroup(groupVersion string) (string, error) {
	gv, err := schema.ParseGroupVersion(groupVersion)
	return gv.Group, err
}

// The API server decides for the [arch]'s account what rbac.yaml means:
// it reads pods, nodes and deployments in every namespace, changes
// nothing, never reads a secret, and cannot exec, proxy, mint tokens or
// read logs. The namespace's default account (what a pod with no account
// would get) reads nothing. Checked both by SubjectAccessReview and with
// a real token of the account.
func TestArchServiceAccountReadsTheClusterButSecrets(t *testing.T) {
	srv := kubetest.Shared(t)
	ctx := t.Context()
	admin, err := kubernetes.NewForConfig(srv.Config)
	require.NoError(t, err)
	ns := kubetest.Namespace(t, srv.Config)
	applyDeploy(t, srv, admin, ns)
	other := kubetest.Namespace(t, srv.Config)

	arch := "system:serviceaccount:" + ns + ":" + kube.ArchServiceAccount
	plain := "system:serviceaccount:" + ns + ":default"
	for _, tc := range []struct {
		user, verb, group, resource, sub, ns string
		allowed                              bool
	}{
		{arch, "list", "", "pods", "", other, true},
		{arch, "watch", "", "pods", "", "", true},
		{arch, "get", "", "nodes", "", "", true},
		{arch, "list", "", "configmaps", "", other, true},
		{arch, "list", "apps", "deployments", "", "", true},
		{arch, "list", "networking.k8s.io", "networkpolicies", "", ns, true},
		{arch, "get", "", "secrets", "", ns, false},
		{arch, "list", "", "secrets", "", "", false},
		{arch, "watch", "", "secrets", "", other, false},
		{arch, "create", "", "pods", "", ns, false},
		{arch, "delete", "", "pods", "", ns, false},
		{arch, "update", "apps", "deployments", "", ns, false},
		{arch, "create", "", "pods", "exec", ns, false},
		{arch, "get", "", "pods", "exec", ns, false},
		{arch, "get", "", "pods", "proxy", ns, false},
		{arch, "get", "", "nodes", "proxy", "", false},
		{arch, "get", "", "pods", "log", ns, false},
		{arch, "create", "", "serviceaccounts", "token", ns, false},
		{plain, "list", "", "pods", "", ns, false},
		{plain, "get", "", "nodes", "", "", false},
	} {
		sar, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User:   tc.user,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Verb: tc.verb, Group: tc.group, Resource: tc.resource, Subresource: tc.sub, Namespace: tc.ns,
				},
			},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Equal(t, tc.allowed, sar.Status.Allowed, "%s %s %s/%s %s in %q: %s", tc.user, tc.verb, tc.group, tc.resource, tc.sub, tc.ns, sar.Status.Reason)
	}

	// A real token of the account, as the kubelet would mount it.
	tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, kube.ArchServiceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"https://kubernetes.default.svc"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	cfg := rest.AnonymousClientConfig(srv.Config)
	cfg.BearerToken = tr.Status.Token
	as, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	_, err = as.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	assert.NoError(t, err, "the [arch] lists pods in every namespace")
	_, err = as.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	assert.True(t, apierrors.IsForbidden(err), "the [arch] is refused secrets: %v", err)
}

// Only the [arch]'s pod carries the [arch]'s account and a token; every
// other rank runs with none (the namespace's default account, its token
// not mounted).
func TestOnlyTheArchPodGetsAServiceAccountToken(t *testing.T) {
	for _, tc := range []struct {
		rank      state.Rank
		account   string
		automount bool
	}{
		{state.RankSpore, "", false},
		{state.RankSwarm, "", false},
		{state.RankColony, "", false},
		{state.RankArch, kube.ArchServiceAccount, true},
	} {
		t.Run(string(tc.rank), func(t *testing.T) {
			s := spore("x")
			s.Rank = tc.rank
			pod, err := kube.Options{Namespace: "sporectl"}.PodFor(s, "")
			require.NoError(t, err)
			assert.Equal(t, tc.account, pod.Spec.ServiceAccountName)
			require.NotNil(t, pod.Spec.AutomountServiceAccountToken, "set, never left to the account's default")
			assert.Equal(t, tc.automount, *pod.Spec.AutomountServiceAccountToken)
			for _, v := range pod.Spec.Volumes {
				assert.Nil(t, v.Projected, "no token volume of its own: %s", v.Name)
			}
		})
	}
}
