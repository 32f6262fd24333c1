package kubetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Namespace creates a fresh namespace with the "default" service account
// a controller-manager would have made (the ServiceAccount admission
// plugin refuses pods without it), and deletes it when tb ends.
func Namespace(tb testing.TB, cfg *rest.Config) string {
	tb.Helper()
	ctx := tb.Context()
	cs, err := kubernetes.NewForConfig(cfg)
	mustf(tb, err, "client")
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "t-" + hex.EncodeToString(b)
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	mustf(tb, err, "create namespace %s", name)
	_, err = cs.CoreV1().ServiceAccounts(name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	mustf(tb, err, "create default service account in %s", name)
	tb.Cleanup(func() {
		// Without a namespace controller the namespace stays Terminating;
		// that is fine, nothing else reuses its name.
		// tb.Context is already cancelled when cleanups run.
		_ = cs.CoreV1().Namespaces().Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{})
	})
	return name
}
