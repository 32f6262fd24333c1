package kube_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/kube/kubetest"
)

// archNarrowRole is kube/deploy's narrower ClusterRole for the [arch].
const archNarrowRole = "sporectl-arch-narrow"

// What the narrow role leaves out, and why: each holds a pod spec (whose
// env often carries credentials), a ConfigMap, a Secret, or opaque driver
// parameters.
var (
	archNarrowLeftOutCore   = []string{"configmaps", "secrets", "pods", "podtemplates", "replicationcontrollers"}
	archNarrowLeftOutGroups = []string{"apps", "batch", "resource.k8s.io"}
)

func deployClusterRole(t *testing.T, name string) *rbacv1.ClusterRole {
	t.Helper()
	for _, o := range renderDeploy(t) {
		if o.GetKind() == "ClusterRole" && o.GetName() == name {
			role := &rbacv1.ClusterRole{}
			require.NoError(t, runtimeFromUnstructured(o, role))
			return role
		}
	}
	t.Fatalf("kube/deploy has no ClusterRole %s", name)
	return nil
}

// The narrow role reads less than sporectl-arch and nothing it leaves
// out: no ConfigMap, no Secret, nothing that embeds a pod spec, no
// subresource, no wildcard group. Against the API server's discovery,
// every core resource and group it serves is either granted or on the
// list above, so a Kubernetes release that adds one fails here until
// rbac.yaml decides.
func TestArchNarrowClusterRoleLeavesOutConfigAndPodSpecs(t *testing.T) {
	srv := kubetest.Shared(t)
	narrow, broad := deployClusterRole(t, archNarrowRole), deployClusterRole(t, kube.ArchServiceAccount)
	granted := func(role *rbacv1.ClusterRole) (core, groups map[string]bool) {
		core, groups = map[string]bool{}, map[string]bool{}
		for _, r := range role.Rules {
			assert.Equal(t, []string{"get", "list", "watch"}, r.Verbs, "%s is read-only: %v", role.Name, r)
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
		return core, groups
	}
	core, groups := granted(narrow)
	broadCore, broadGroups := granted(broad)
	for res := range core {
		assert.NotContains(t, res, "/", "no core subresource")
		assert.NotContains(t, archNarrowLeftOutCore, res, "the narrow role must not read %s", res)
		assert.True(t, broadCore[res], "the narrow role reads no more than sporectl-arch: %s", res)
	}
	for g := range groups {
		assert.NotContains(t, archNarrowLeftOutGroups, g, "the narrow role must not read group %s", g)
		assert.True(t, broadGroups[g], "the narrow role reads no more than sporectl-arch: group %s", g)
	}

	disc, err := kubernetes.NewForConfig(srv.Config)
	require.NoError(t, err)
	_, lists, err := disc.Discovery().ServerGroupsAndResources()
	require.NoError(t, err)
	for _, l := range lists {
		g, err := schemaGroup(l.GroupVersion)
		require.NoError(t, err)
		if g != "" {
			assert.True(t, groups[g] || slices.Contains(archNarrowLeftOutGroups, g), "the API server serves group %s: the narrow role must grant or leave it out", g)
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			assert.True(t, core[r.Name] || slices.Contains(archNarrowLeftOutCore, r.Name), "core resource %s is served: the narrow role must grant or leave it out", r.Name)
		}
	}
}

// Bound instead of sporectl-arch, as rbac.yaml says to, the narrow role
// lets the [arch]'s account read nodes, events, services and network
// policies everywhere, and refuses ConfigMaps, pods, workloads, pod
// templates, Secrets and logs: decided by the API server
// (SubjectAccessReview).
func TestArchNarrowRoleBoundReadsNoConfigOrPodSpecs(t *testing.T) {
	srv := kubetest.Shared(t)
	ctx := t.Context()
	admin, err := kubernetes.NewForConfig(srv.Config)
	require.NoError(t, err)
	ns := kubetest.Namespace(t, srv.Config)
	applyDeployKinds(t, srv, admin, ns, "ServiceAccount", "ClusterRole")
	// The binding rbac.yaml tells the operator to make, to the role as
	// applied here (its name carries the namespace, moveNamespace).
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: kube.ArchServiceAccount + "-" + ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: archNarrowRole + "-" + ns},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: kube.ArchServiceAccount, Namespace: ns}},
	}
	_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = admin.RbacV1().ClusterRoleBindings().Delete(t.Context(), binding.Name, metav1.DeleteOptions{})
	})
	other := kubetest.Namespace(t, srv.Config)

	arch := "system:serviceaccount:" + ns + ":" + kube.ArchServiceAccount
	for _, tc := range []struct {
		verb, group, resource, sub, ns string
		allowed                        bool
	}{
		{"list", "", "nodes", "", "", true},
		{"list", "", "events", "", other, true},
		{"watch", "", "services", "", "", true},
		{"list", "", "persistentvolumeclaims", "", other, true},
		{"list", "networking.k8s.io", "networkpolicies", "", ns, true},
		{"list", "metrics.k8s.io", "pods", "", other, true},
		{"list", "", "configmaps", "", other, false},
		{"get", "", "configmaps", "", ns, false},
		{"list", "", "pods", "", other, false},
		{"get", "", "pods", "", ns, false},
		{"list", "", "podtemplates", "", "", false},
		{"list", "", "replicationcontrollers", "", "", false},
		{"list", "apps", "deployments", "", "", false},
		{"list", "apps", "statefulsets", "", other, false},
		{"list", "apps", "controllerrevisions", "", other, false},
		{"list", "batch", "cronjobs", "", "", false},
		{"get", "", "secrets", "", ns, false},
		{"get", "", "pods", "log", ns, false},
		{"create", "", "serviceaccounts", "token", ns, false},
		{"create", "", "pods", "", ns, false},
	} {
		sar, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{
				User:   arch,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Verb: tc.verb, Group: tc.group, Resource: tc.resource, Subresource: tc.sub, Namespace: tc.ns,
				},
			},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.Equal(t, tc.allowed, sar.Status.Allowed, "%s %s/%s %s in %q: %s", tc.verb, tc.group, tc.resource, tc.sub, tc.ns, sar.Status.Reason)
	}
}
