package kube

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// seen is what the fake API server was sent.
type seen struct {
	method, path, query, contentType, accept string
	body                                     []byte
}

// fakeAPI answers every request with a 404 Status in protobuf, as the API
// server does to a client that accepts it, and records the request.
func fakeAPI(t *testing.T) (*httptest.Server, *seen) {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(coreCodecs().codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	require.True(t, ok, "the core scheme's codecs have no protobuf serializer")
	enc := coreCodecs().codecs.EncoderForVersion(info.Serializer, schema.GroupVersion{Version: "v1"})
	status := apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "spore-a").ErrStatus
	answer, err := runtime.Encode(enc, &status)
	require.NoError(t, err)

	var got seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got = seen{r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Content-Type"), r.Header.Get("Accept"), body}
		w.Header().Set("Content-Type", runtime.ContentTypeProtobuf)
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write(answer)
	}))
	t.Cleanup(srv.Close)
	return srv, &got
}

// TestCoreClientSpeaksProtobuf: the runtime's core/v1 client asks for
// protobuf, sends it, bounds each request by requestTimeout (the timeout
// parameter, which the API server enforces too), and turns the server's
// protobuf Status into an error apierrors recognises, for each call the
// runtime makes.
func TestCoreClientSpeaksProtobuf(t *testing.T) {
	srv, got := fakeAPI(t)
	r, err := New(&rest.Config{Host: srv.URL}, Options{Namespace: "moss"})
	require.NoError(t, err)
	ctx := t.Context()
	uid := types.UID("uid-1")

	tests := []struct {
		name             string
		call             func() error
		method, path     string
		query            string
		sendsProtobuf    bool
		acceptsProtobuf  bool
		wantPrecondition bool
	}{
		{name: "get", method: "GET", path: "/api/v1/namespaces/moss/pods/spore-a", query: "timeout=1m0s", acceptsProtobuf: true,
			call: func() error { _, err := r.core.pods().get(ctx, "spore-a"); return err }},
		{name: "list", method: "GET", path: "/api/v1/namespaces/moss/persistentvolumeclaims", acceptsProtobuf: true,
			query: "labelSelector=app.kubernetes.io%2Fmanaged-by%3Dsporectl&timeout=1m0s",
			call:  func() error { _, err := r.core.claims().list(ctx, "app.kubernetes.io/managed-by=sporectl"); return err }},
		{name: "create", method: "POST", path: "/api/v1/namespaces/moss/secrets", query: "timeout=1m0s", acceptsProtobuf: true, sendsProtobuf: true,
			call: func() error {
				_, err := r.core.secrets().create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "spore-a"}})
				return err
			}},
		{name: "update", method: "PUT", path: "/api/v1/namespaces/moss/secrets/spore-a", query: "timeout=1m0s", acceptsProtobuf: true, sendsProtobuf: true,
			call: func() error {
				_, err := r.core.secrets().update(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "spore-a"}})
				return err
			}},
		{name: "delete", method: "DELETE", path: "/api/v1/namespaces/moss/pods/spore-a", query: "timeout=1m0s", acceptsProtobuf: true, sendsProtobuf: true, wantPrecondition: true,
			call: func() error {
				return r.core.pods().delete(ctx, "spore-a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			}},
		{name: "logs", method: "GET", path: "/api/v1/namespaces/moss/pods/spore-a/log", query: "container=bridge&timeout=1m0s",
			call: func() error {
				_, err := r.core.podLogs("spore-a", &corev1.PodLogOptions{Container: containerName}).DoRaw(ctx)
				return err
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			require.True(t, apierrors.IsNotFound(err), "want a NotFound status error, got %T %v", err, err)
			require.Equal(t, tt.method, got.method)
			require.Equal(t, tt.path, got.path)
			require.Equal(t, tt.query, got.query)
			if tt.acceptsProtobuf {
				require.Equal(t, runtime.ContentTypeProtobuf+","+runtime.ContentTypeJSON, got.accept)
			}
			if tt.sendsProtobuf {
				require.Equal(t, runtime.ContentTypeProtobuf, got.contentType)
			}
			if tt.wantPrecondition {
				obj, _, err := coreCodecs().codecs.UniversalDeserializer().Decode(got.body, nil, nil)
				require.NoError(t, err, "delete's body")
				opts, ok := obj.(*metav1.DeleteOptions)
				require.True(t, ok, "delete's body is a %T", obj)
				require.NotNil(t, opts.Preconditions)
				require.Equal(t, uid, *opts.Preconditions.UID)
			}
		})
	}
}
