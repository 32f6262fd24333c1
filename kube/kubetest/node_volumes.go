package kubetest

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LocalStorageClass is the class of the node's volumes, named as the
// seeds' own clusters (k3s) name theirs, so claims made for a real
// cluster bind here unchanged.
const LocalStorageClass = "local-path"

// LocalVolumes makes count `local` PersistentVolumes of size (e.g.
// "1Gi") in the WaitForFirstConsumer class local-path, each a directory
// under the node's directory, and returns their names. Local volumes,
// unlike hostPath ones, honour a pod's fsGroup, so a non-root container
// can write its home. The class is created on first use; the volumes are
// Retain, so a claim's files outlive its pods (and the claim).
func (n *Node) LocalVolumes(tb testing.TB, count int, size string) []string {
	tb.Helper()
	ctx := tb.Context()
	qty, err := resource.ParseQuantity(size)
	mustf(tb, err, "volume size %q", size)
	wait := storagev1.VolumeBindingWaitForFirstConsumer
	_, err = n.Client.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: LocalStorageClass},
		Provisioner:       "kubernetes.io/no-provisioner",
		VolumeBindingMode: &wait,
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		mustf(tb, err, "create storage class %s", LocalStorageClass)
	}
	var names []string
	for i := 0; i < count; i++ {
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "local-"},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: qty},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				StorageClassName:              LocalStorageClass,
				NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
						Key: "kubernetes.io/hostname", Operator: corev1.NodeSelectorOpIn, Values: []string{n.Name},
					}}}},
				}},
			},
		}
		// The name is only known after Create; the path must exist
		// before a pod mounts it, so it is made from a fresh directory
		// name and recorded in the spec first.
		dir, err := os.MkdirTemp(filepath.Join(n.dir, "volumes"), "v-")
		if os.IsNotExist(err) {
			mustf(tb, os.MkdirAll(filepath.Join(n.dir, "volumes"), 0o755), "volumes dir")
			dir, err = os.MkdirTemp(filepath.Join(n.dir, "volumes"), "v-")
		}
		mustf(tb, err, "volume directory")
		mustf(tb, os.Chmod(dir, 0o755), "volume directory mode")
		pv.Spec.PersistentVolumeSource = corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: dir}}
		got, err := n.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
		mustf(tb, err, "create local volume %d", i)
		names = append(names, got.Name)
	}
	return names
}

// VolumePath is where a local volume's files are on the host.
func (n *Node) VolumePath(tb testing.TB, name string) string {
	tb.Helper()
	pv, err := n.Client.CoreV1().PersistentVolumes().Get(tb.Context(), name, metav1.GetOptions{})
	mustf(tb, err, "get volume %s", name)
	if pv.Spec.Local == nil {
		tb.Fatalf("volume %s is not a local volume", name)
	}
	return pv.Spec.Local.Path
}
