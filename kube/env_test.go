package kube_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/kube/deploy"
	"github.com/sporectl/sporectl/kube/kubetest"
)

// env is one test's world: a namespace on the shared API server that
// enforces the restricted Pod Security Standard, the runtime acting as the
// sporectl service account bound to the Role from kube/deploy (so every
// call it makes is checked against that Role), and a kubelet acting as
// admin.
type env struct {
	ns      string
	admin   kubernetes.Interface
	saCfg   *rest.Config
	rt      *kube.Runtime
	kubelet *kubetest.Kubelet
}

func newEnv(t testing.TB) *env {
	t.Helper()
	srv := kubetest.Shared(t)
	ctx := t.Context()
	ns := kubetest.Namespace(t, srv.Config)
	admin, err := kubernetes.NewForConfig(srv.Config)
	require.NoError(t, err)

	nsObj, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	require.NoError(t, err)
	nsObj.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	_, err = admin.CoreV1().Namespaces().Update(ctx, nsObj, metav1.UpdateOptions{})
	require.NoError(t, err)

	saCfg := serviceAccountConfig(t, ctx, srv.Config, admin, ns)
	rt, err := kube.New(saCfg, kube.Options{Namespace: ns})
	require.NoError(t, err)
	return &env{
		ns: ns, admin: admin, saCfg: saCfg, rt: rt,
		kubelet: &kubetest.Kubelet{Client: admin, Namespace: ns},
	}
}

// serviceAccountConfig creates the sporectl service account in ns, binds
// it to the Role and RoleBinding of kube/deploy/rbac.yaml (moved into ns),
// and returns a config that authenticates with a token the API server
// issued for it.
func serviceAccountConfig(t testing.TB, ctx context.Context, adminCfg *rest.Config, admin kubernetes.Interface, ns string) *rest.Config {
	t.Helper()
	_, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sporectl"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	var roles, bindings int
	for _, obj := range manifestObjects(t, "rbac.yaml") {
		switch o := obj.(type) {
		case *rbacv1.Role:
			o.Namespace = ns
			_, err = admin.RbacV1().Roles(ns).Create(ctx, o, metav1.CreateOptions{})
			roles++
		case *rbacv1.RoleBinding:
			o.Namespace = ns
			for i := range o.Subjects {
				o.Subjects[i].Namespace = ns
			}
			_, err = admin.RbacV1().RoleBindings(ns).Create(ctx, o, metav1.CreateOptions{})
			bindings++
		case *corev1.ServiceAccount:
			// The [arch]'s account: an arch spore's pod names it.
			o.Namespace = ns
			_, err = admin.CoreV1().ServiceAccounts(ns).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding:
			continue // the [arch]'s cluster-wide read, which the runtime never uses
		default:
			t.Fatalf("rbac.yaml holds an unexpected %T", obj)
		}
		require.NoError(t, err)
	}
	require.Equal(t, 1, roles, "rbac.yaml must hold one Role")
	require.Equal(t, 1, bindings, "rbac.yaml must hold one RoleBinding")

	tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "sporectl", &authv1.TokenRequest{}, metav1.CreateOptions{})
	require.NoError(t, err)
	cfg := rest.AnonymousClientConfig(adminCfg)
	cfg.BearerToken = tr.Status.Token
	waitAuthorized(t, ctx, cfg, ns)
	return cfg
}

// waitAuthorized waits until the API server's RBAC authorizer, which
// reads bindings from an informer cache, has seen the new RoleBinding;
// on a loaded machine that takes a moment, and a first request sent
// sooner is refused.
func waitAuthorized(t testing.TB, ctx context.Context, cfg *rest.Config, ns string) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	review := &authzv1.SelfSubjectAccessReview{Spec: authzv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authzv1.ResourceAttributes{Namespace: ns, Verb: "create", Resource: "pods"},
	}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err == nil && got.Status.Allowed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sporectl service account is still not allowed to create pods in %s (err %v)", ns, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// manifestObjects decodes every document of one embedded manifest.
func manifestObjects(t testing.TB, name string) []runtime.Object {
	t.Helper()
	b, err := deploy.Files.ReadFile(name)
	require.NoError(t, err)
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var out []runtime.Object
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		require.NoError(t, err, "decode a document of %s", name)
		out = append(out, obj)
	}
}
