package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"

	"github.com/sporectl/sporectl/internal/lazy"
)

// coreClient is the runtime's client of the core API group: a REST client
// over a scheme of core/v1 and meta/v1 alone, and the calls the runtime
// makes on its pods, secrets and claims. client-go's typed clientset would
// do the same, but it links every API group of k8s.io/api and registers
// all of them in its scheme at init, which every sporectl command paid for
// at process start (docs/performance.md, "Process start").
type coreClient struct {
	rest      *rest.RESTClient
	namespace string
}

// coreCodecs is the scheme the core client encodes and decodes with,
// built when the first client is: commands that talk to no cluster never
// build it.
var coreCodecs = lazy.New("kube.coreScheme", func() coreScheme {
	s := runtime.NewScheme()
	// The options types (GetOptions, ListOptions, DeleteOptions, ...) and
	// Status, which Result.Error decodes an error answer into, so that
	// apierrors.IsNotFound and the rest see the server's reason.
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	utilruntime.Must(corev1.AddToScheme(s))
	return coreScheme{codecs: serializer.NewCodecFactory(s), params: runtime.NewParameterCodec(s), scheme: s}
})

// coreScheme is the scheme and the codecs built from it.
type coreScheme struct {
	scheme *runtime.Scheme
	codecs serializer.CodecFactory
	params runtime.ParameterCodec
}

// newCoreClient builds the client for namespace from cfg, which says the
// content types, timeout and rate limit; it makes no request.
func newCoreClient(cfg *rest.Config, namespace string) (*coreClient, error) {
	c := rest.CopyConfig(cfg)
	cs := coreCodecs()
	c.APIPath = "/api"
	gv := corev1.SchemeGroupVersion // a copy: the config must not point into k8s.io/api
	c.GroupVersion = &gv
	c.NegotiatedSerializer = rest.CodecFactoryForGeneratedClient(cs.scheme, cs.codecs).WithoutConversion()
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("core/v1 client: %w", err)
	}
	return &coreClient{rest: rc, namespace: namespace}, nil
}

// object is a pointer to a core/v1 object type the client decodes into.
type object[T any] interface {
	*T
	runtime.Object
	metav1.Object
}

// objectList is a pointer to a core/v1 list type.
type objectList[L any] interface {
	*L
	runtime.Object
}

// coreResource is one namespaced resource of core/v1: T its object type, L
// its list type, name its path segment ("pods").
type coreResource[T, L any, PT object[T], PL objectList[L]] struct {
	c    *coreClient
	name string
}

type (
	podResource    = coreResource[corev1.Pod, corev1.PodList, *corev1.Pod, *corev1.PodList]
	secretResource = coreResource[corev1.Secret, corev1.SecretList, *corev1.Secret, *corev1.SecretList]
	claimResource  = coreResource[corev1.PersistentVolumeClaim, corev1.PersistentVolumeClaimList, *corev1.PersistentVolumeClaim, *corev1.PersistentVolumeClaimList]
)

func (c *coreClient) pods() podResource       { return podResource{c: c, name: "pods"} }
func (c *coreClient) secrets() secretResource { return secretResource{c: c, name: "secrets"} }
func (c *coreClient) claims() claimResource {
	return claimResource{c: c, name: "persistentvolumeclaims"}
}

// request starts a request on the resource in the client's namespace.
func (r coreResource[T, L, PT, PL]) request(verb string) *rest.Request {
	return r.c.rest.Verb(verb).Namespace(r.c.namespace).Resource(r.name)
}

// get reads the object called name. An error answer is an apierrors
// status error (apierrors.IsNotFound and the rest apply to it).
func (r coreResource[T, L, PT, PL]) get(ctx context.Context, name string) (PT, error) {
	out := PT(new(T))
	err := r.request("GET").Name(name).Do(ctx).Into(out)
	return out, err
}

// list reads the objects the label selector picks.
func (r coreResource[T, L, PT, PL]) list(ctx context.Context, selector string) (PL, error) {
	out := PL(new(L))
	err := r.request("GET").
		VersionedParams(&metav1.ListOptions{LabelSelector: selector}, coreCodecs().params).
		Do(ctx).Into(out)
	return out, err
}

// create creates obj and returns what the server stored.
func (r coreResource[T, L, PT, PL]) create(ctx context.Context, obj PT) (PT, error) {
	out := PT(new(T))
	err := r.request("POST").Body(obj).Do(ctx).Into(out)
	return out, err
}

// update replaces obj (by its name; its resourceVersion makes a stale
// update a conflict) and returns what the server stored.
func (r coreResource[T, L, PT, PL]) update(ctx context.Context, obj PT) (PT, error) {
	out := PT(new(T))
	err := r.request("PUT").Name(obj.GetName()).Body(obj).Do(ctx).Into(out)
	return out, err
}

// delete deletes the object called name as opts say (preconditions,
// propagation).
func (r coreResource[T, L, PT, PL]) delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return r.request("DELETE").Name(name).Body(&opts).Do(ctx).Error()
}

// podLogs is the request for pod name's log (pods/log) as opts say; the
// caller streams it or reads it whole.
func (c *coreClient) podLogs(name string, opts *corev1.PodLogOptions) *rest.Request {
	return c.rest.Get().Namespace(c.namespace).Resource("pods").Name(name).SubResource("log").
		VersionedParams(opts, coreCodecs().params)
}
