package kube

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sporectl/sporectl/bridge/sporeenv"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

// Keys of the spore's Secret. The bridge reads its token from the
// environment (DESIGN "The bridge"), so the pod maps these into env vars.
const (
	SecretKeyAPIToken    = "api-token"
	SecretKeyBridgeToken = "bridge-token"
	containerName        = "bridge"
	homeVolume           = "home"
	tmpVolume            = "tmp"

	// ArchServiceAccount is the account kube/deploy/rbac.yaml binds to
	// a ClusterRole that reads everything but secrets. Only a spore of
	// rank arch runs with it: the seeds' [arch] is the one spore that
	// reads the cluster.
	ArchServiceAccount = "sporectl-arch"
)

// ModelSecret is the Secret, in the runtime's namespace, that holds the
// model's credentials (ANTHROPIC_API_KEY, …). Behind the gateway (the
// default) serve's Deployment alone gets it (kube/deploy/serve.yaml) and
// no spore pod does; in direct mode every spore pod gets its keys as
// environment variables, as the local runtime passes the caller's through
// (kube/model.go). The operator creates it; sporectl only names it, never
// reads it. Optional: a pod starts without it (the echo agent needs no
// key), and the variables sporectl sets itself win over its keys.
const ModelSecret = "sporectl-model"

// objectMeta is the identity every spore object carries.
func objectMeta(s state.Spore, ns string) metav1.ObjectMeta {
	l := map[string]string{
		LabelManagedBy: ManagedByValue,
		LabelComponent: ComponentSpore,
		LabelSpore:     s.ID,
		LabelColony:    s.Colony,
		LabelRank:      string(s.Rank),
	}
	if s.Swarm != "" {
		l[LabelSwarm] = s.Swarm
	}
	return metav1.ObjectMeta{
		Name:        ObjectName(s.ID),
		Namespace:   ns,
		Labels:      l,
		Annotations: map[string]string{AnnotationOwner: OwnerValue},
	}
}

// podMeta is objectMeta with what only a pod carries: its colony's
// egress, which the NetworkPolicies select on (a claim or a Secret sends
// no packet).
func (o Options) podMeta(s state.Spore) metav1.ObjectMeta {
	m := objectMeta(s, o.Namespace)
	m.Labels[LabelEgress] = o.egress(s.Colony)
	return m
}

// ClaimFor is the spore's home.
func (o Options) ClaimFor(s state.Spore) (*corev1.PersistentVolumeClaim, error) {
	spec := o.spec(s.Spec)
	size, err := resource.ParseQuantity(spec.Storage)
	if err != nil {
		return nil, fmt.Errorf("spore %s: storage %q: %w", s.ID, spec.Storage, err)
	}
	class := o.storageClass()
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: objectMeta(s, o.Namespace),
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &class,
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: size},
			},
		},
	}, nil
}

// SecretFor holds the spore's tokens; it is the only place their
// plaintext lives in the cluster.
func (o Options) SecretFor(s state.Spore, creds reconcile.Credentials) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: objectMeta(s, o.Namespace),
		Type:       corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			SecretKeyAPIToken:    []byte(creds.APIToken),
			SecretKeyBridgeToken: []byte(creds.BridgeToken),
		},
	}
}

// PodFor runs `sporectl bridge` with the home mounted and the spore's
// environment (bridge/sporeenv), identity the agent's text of who it is
// ("" for none). Requests equal limits so the pod is Guaranteed QoS: the
// last to be evicted under node pressure, since an evicted spore loses the
// step it was on.
func (o Options) PodFor(s state.Spore, identity string) (*corev1.Pod, error) {
	spec := o.spec(s.Spec)
	cpu, err := resource.ParseQuantity(spec.CPU)
	if err != nil {
		return nil, fmt.Errorf("spore %s: cpu %q: %w", s.ID, spec.CPU, err)
	}
	mem, err := resource.ParseQuantity(spec.Memory)
	if err != nil {
		return nil, fmt.Errorf("spore %s: memory %q: %w", s.ID, spec.Memory, err)
	}
	res := corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem}
	name := ObjectName(s.ID)
	fromSecret := func(key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: name},
			Key:                  key,
		}}
	}
	uid, no, yes := int64(SporeUID), false, true
	grace := int64(30)
	onRootMismatch := corev1.FSGroupChangeOnRootMismatch
	// A spore has no business with the Kubernetes API; it talks only to
	// `serve`. The [arch] alone reads the cluster, with its own account's
	// token (and the namespace's default account's token is never
	// mounted into anyone).
	account, automount := "", &no
	if policy.ReadsCluster(s) {
		account, automount = ArchServiceAccount, &yes
	}
	pod := &corev1.Pod{
		ObjectMeta: o.podMeta(s),
		Spec: corev1.PodSpec{
			ServiceAccountName:            account,
			AutomountServiceAccountToken:  automount,
			EnableServiceLinks:            &no,
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: &grace,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: &yes,
				RunAsUser:    &uid,
				RunAsGroup:   &uid,
				FSGroup:      &uid,
				// The kubelet gives a volume to the fsGroup as it mounts
				// it: with Always (the default) by walking every file of
				// the home on every wake, which grows with the home. The
				// spore's own files are its group's already; the walk is
				// done when the home's root is not (its first mount).
				FSGroupChangePolicy: &onRootMismatch,
				SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name:  containerName,
				Image: spec.Image,
				// Not Always (the default for `:latest`): an image imported
				// into the node's containerd (ctr, k3s) must run as it is,
				// with no registry asked.
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         []string{"sporectl", "bridge", "--agent", o.agent()},
				WorkingDir:      HomePath,
				// A bridge that exits on an error says why on its last
				// line of stderr; the kubelet keeps the log's end as the
				// termination message, which status shows.
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
				Ports:                    []corev1.ContainerPort{{Name: "bridge", ContainerPort: BridgePort, Protocol: corev1.ProtocolTCP}},
				EnvFrom:                  o.modelEnvFrom(),
				Env: append([]corev1.EnvVar{
					{Name: "HOME", Value: HomePath},
					{Name: sporeenv.SporeID, Value: s.ID},
					{Name: sporeenv.Identity, Value: identity},
					{Name: sporeenv.APIURL, Value: o.apiURL()},
					{Name: sporeenv.BridgeAddr, Value: fmt.Sprintf(":%d", BridgePort)},
					{Name: sporeenv.BridgeToken, ValueFrom: fromSecret(SecretKeyBridgeToken)},
					{Name: sporeenv.APIToken, ValueFrom: fromSecret(SecretKeyAPIToken)},
				}, o.modelEnv()...),
				Resources:      corev1.ResourceRequirements{Requests: res, Limits: res},
				ReadinessProbe: readinessProbe(),
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: &no,
					ReadOnlyRootFilesystem:   &yes,
					RunAsNonRoot:             &yes,
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
				VolumeMounts: []corev1.VolumeMount{
					{Name: homeVolume, MountPath: HomePath},
					// The root filesystem is read-only; tools (git, npm,
					// Claude Code) still need a scratch /tmp.
					{Name: tmpVolume, MountPath: "/tmp"},
				},
			}},
			Volumes: []corev1.Volume{
				{Name: homeVolume, VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name},
				}},
				{Name: tmpVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
		},
	}
	// The layers, most general first: the store's default, the colony's,
	// then the spore's own.
	withPodOptions(pod, state.MergePod(o.DefaultSpec.Pod, o.ColonyPods[s.Colony], s.Spec.Pod))
	return pod, nil
}

// withPodOptions adds the operator's pod options (docs/runtimes.md "Pod
// options") to a pod PodFor made. State refuses the label and annotation
// keys sporectl sets; should a record hold one anyway, sporectl's value is
// kept, so a pod option can never change what sporectl owns. The
// Secrets come after the model's, so a key both hold takes theirs, and
// are not optional: a pod whose Secret is missing waits
// (CreateContainerConfigError) rather than running without what the
// operator asked for.
func withPodOptions(pod *corev1.Pod, p state.PodOptions) {
	if p.RuntimeClassName != "" {
		rc := p.RuntimeClassName
		pod.Spec.RuntimeClassName = &rc
	}
	if len(p.NodeSelector) > 0 {
		pod.Spec.NodeSelector = maps.Clone(p.NodeSelector)
	}
	for _, t := range p.Tolerations {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, corev1.Toleration{
			Key:               t.Key,
			Operator:          corev1.TolerationOperator(t.Operator),
			Value:             t.Value,
			Effect:            corev1.TaintEffect(t.Effect),
			TolerationSeconds: t.TolerationSeconds,
		})
	}
	c := &pod.Spec.Containers[0]
	for _, name := range p.EnvFromSecrets {
		c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: name},
		}})
	}
	pod.Labels = under(pod.Labels, p.Labels)
	pod.Annotations = under(pod.Annotations, p.Annotations)
}

// under returns own with the entries of extra whose keys own lacks.
func under(own, extra map[string]string) map[string]string {
	for k, v := range extra {
		if _, ok := own[k]; !ok {
			own[k] = v
		}
	}
	return own
}
