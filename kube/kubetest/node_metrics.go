package kubetest

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
)

// EnvMetricsServerBinDir names the directory .ci/metrics-server.sh fills
// with the metrics-server binary.
const EnvMetricsServerBinDir = "SPORECTL_METRICS_SERVER_BIN_DIR"

// The aggregated metrics API as metrics-server registers it in a cluster:
// an APIService for v1beta1.metrics.k8s.io backed by kube-system's
// metrics-server Service.
const (
	MetricsAPIService     = "v1beta1.metrics.k8s.io"
	metricsNamespace      = "kube-system"
	metricsServiceName    = "metrics-server"
	metricsPortName       = "https"
	metricsResolution     = 10 * time.Second // metrics-server's minimum
	metricsAvailableLimit = 90 * time.Second
)

var apiServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// MetricsServer is metrics-server run on the host as one of the node's
// processes, scraping the node's real kubelet and served through the API
// server as the aggregated API v1beta1.metrics.k8s.io.
type MetricsServer struct {
	// Addr is where it serves (the bridge's address and a free port).
	Addr    string
	node    *Node
	dyn     dynamic.Interface
	stopped bool
}

// MetricsServerBinary is the metrics-server binary .ci/metrics-server.sh
// built.
func MetricsServerBinary() (string, error) {
	dir := os.Getenv(EnvMetricsServerBinDir)
	if dir == "" {
		return "", fmt.Errorf("%s is not set; run: export %s=\"$(.ci/metrics-server.sh)\"", EnvMetricsServerBinDir, EnvMetricsServerBinDir)
	}
	p := filepath.Join(dir, "metrics-server")
	st, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("%s: %w (build it with .ci/metrics-server.sh)", p, err)
	}
	if st.Mode()&0o111 == 0 {
		return "", fmt.Errorf("%s is not executable", p)
	}
	return p, nil
}

// StartMetricsServer runs metrics-server against the node's kubelet,
// registers it as v1beta1.metrics.k8s.io (an APIService, a selectorless
// Service and an EndpointSlice at the bridge's address: the API server
// routes to the endpoint, as --enable-aggregator-routing says) and waits
// until the API server reports the APIService Available. The metrics it
// serves come from its scrapes: a pod has none until it was scraped twice
// (CPU is a rate of two samples), 10-20 s after it started. Stopped, and
// its objects deleted, in tb's cleanup (before the node, which was made
// first). Without its binary it skips, or fails when CI is set.
//
// Harness only: it does not verify the kubelet's serving certificate
// (--kubelet-insecure-tls; the node's kubelet serves a self-signed one),
// as the API server does not either; it proves itself to the kubelet with
// the API server's kubelet client certificate.
func (n *Node) StartMetricsServer(tb testing.TB) *MetricsServer {
	tb.Helper()
	bin, err := MetricsServerBinary()
	if err != nil {
		if inCI() {
			tb.Fatalf("CI is set but %v", err)
		}
		tb.Skip(err)
	}
	ctx, cancel := context.WithTimeout(tb.Context(), 2*time.Minute)
	defer cancel()
	m, err := n.startMetricsServer(ctx, bin)
	if m != nil {
		tb.Cleanup(func() {
			if err := m.Stop(); err != nil {
				tb.Errorf("stop metrics-server: %v", err)
			}
		})
	}
	mustf(tb, err, "start metrics-server")
	return m
}

func (n *Node) startMetricsServer(ctx context.Context, bin string) (*MetricsServer, error) {
	dyn, err := dynamic.NewForConfig(n.Config)
	if err != nil {
		return nil, err
	}
	port, err := freePortOn(n.IP)
	if err != nil {
		return nil, fmt.Errorf("pick metrics-server's port: %w", err)
	}
	dir := filepath.Join(n.dir, "metrics-server")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	certPEM, certFile, keyFile, err := writeMetricsServingCert(dir, n.IP)
	if err != nil {
		return nil, err
	}
	m := &MetricsServer{Addr: net.JoinHostPort(n.IP, strconv.Itoa(port)), node: n, dyn: dyn}
	if err := n.spawn(bin,
		// The admin kubeconfig: it lists nodes and pods, reads the
		// front-proxy CA from kube-system's extension-apiserver-
		// authentication ConfigMap, and checks callers with
		// SubjectAccessReviews.
		"--kubeconfig="+n.Kubeconfig,
		"--authentication-kubeconfig="+n.Kubeconfig,
		"--authorization-kubeconfig="+n.Kubeconfig,
		"--bind-address="+n.IP, "--secure-port="+strconv.Itoa(port),
		"--tls-cert-file="+certFile, "--tls-private-key-file="+keyFile,
		"--cert-dir="+dir,
		"--kubelet-preferred-address-types=InternalIP",
		"--kubelet-insecure-tls",
		"--kubelet-client-certificate="+filepath.Join(n.dir, "apiserver-kubelet-client.crt"),
		"--kubelet-client-key="+filepath.Join(n.dir, "apiserver-kubelet-client.key"),
		// The resolution must exceed the request timeout (default 10s).
		"--metric-resolution="+metricsResolution.String(), "--kubelet-request-timeout=5s",
		"--v=1",
	); err != nil {
		return nil, err
	}
	if err := m.register(ctx, port, certPEM); err != nil {
		return m, err
	}
	if err := m.waitAvailable(ctx, metricsAvailableLimit); err != nil {
		return m, err
	}
	return m, nil
}

// register creates the Service, its EndpointSlice and the APIService.
func (m *MetricsServer) register(ctx context.Context, port int, caBundle []byte) error {
	c := m.node.Client
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: metricsServiceName, Namespace: metricsNamespace},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{
			Name: metricsPortName, Port: 443, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(int32(port)),
		}}},
	}
	if _, err := c.CoreV1().Services(metricsNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create the metrics-server Service: %w", err)
	}
	pn, pp, proto, ready := metricsPortName, int32(port), corev1.ProtocolTCP, true
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: metricsServiceName, Namespace: metricsNamespace, Labels: map[string]string{
			discoveryv1.LabelServiceName: metricsServiceName,
			// Not the EndpointSlice controller's: it leaves the slice alone.
			discoveryv1.LabelManagedBy: "kubetest",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{m.node.IP}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &pn, Port: &pp, Protocol: &proto}},
	}
	if _, err := c.DiscoveryV1().EndpointSlices(metricsNamespace).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create the metrics-server EndpointSlice: %w", err)
	}
	apiService := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": MetricsAPIService},
		"spec": map[string]any{
			"group":                "metrics.k8s.io",
			"version":              "v1beta1",
			"groupPriorityMinimum": int64(100),
			"versionPriority":      int64(100),
			"service":              map[string]any{"namespace": metricsNamespace, "name": metricsServiceName, "port": int64(443)},
			// Its own self-signed serving certificate, for the Service's
			// DNS name the API server checks.
			"caBundle": base64.StdEncoding.EncodeToString(caBundle),
		},
	}}
	if _, err := m.dyn.Resource(apiServiceGVR).Create(ctx, apiService, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create the APIService %s: %w", MetricsAPIService, err)
	}
	return nil
}

// waitAvailable waits for the APIService's Available condition.
func (m *MetricsServer) waitAvailable(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	last := "no Available condition"
	for {
		u, err := m.dyn.Resource(apiServiceGVR).Get(ctx, MetricsAPIService, metav1.GetOptions{})
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, c := range conds {
				cm, _ := c.(map[string]any)
				if cm["type"] == "Available" {
					if cm["status"] == "True" {
						return nil
					}
					last = fmt.Sprintf("%v: %v", cm["reason"], cm["message"])
				}
			}
		}
		if p := m.node.proc("metrics-server"); p != nil && p.exited() {
			return fmt.Errorf("metrics-server exited:\n%s", m.node.NodeLogTail("metrics-server"))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("APIService %s not Available after %s (%s):\n%s", MetricsAPIService, limit, last, m.node.NodeLogTail("metrics-server"))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Stop deletes the APIService first (an aggregated API that does not
// answer fails discovery, and with it namespace deletion and garbage
// collection), then the Service and its EndpointSlice, then stops the
// process. Safe to call more than once.
func (m *MetricsServer) Stop() error {
	if m.stopped {
		return nil
	}
	m.stopped = true
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var errs []error
	if err := m.dyn.Resource(apiServiceGVR).Delete(ctx, MetricsAPIService, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("delete the APIService: %w", err))
	}
	c := m.node.Client
	if err := c.DiscoveryV1().EndpointSlices(metricsNamespace).Delete(ctx, metricsServiceName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("delete the EndpointSlice: %w", err))
	}
	if err := c.CoreV1().Services(metricsNamespace).Delete(ctx, metricsServiceName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("delete the Service: %w", err))
	}
	m.node.stopProc("metrics-server", 10*time.Second)
	if len(errs) > 0 {
		return fmt.Errorf("metrics-server teardown: %v", errs)
	}
	return nil
}

// LogTail is the end of metrics-server's log, for failure output.
func (m *MetricsServer) LogTail() string { return m.node.NodeLogTail("metrics-server") }

// freePortOn asks the kernel for an unused port on ip.
func freePortOn(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// writeMetricsServingCert writes a self-signed serving certificate for
// the Service's DNS name (what the API server checks when it proxies to
// an APIService) and the bridge's address.
func writeMetricsServingCert(dir, ip string) (certPEM []byte, certFile, keyFile string, err error) {
	name := metricsServiceName + "." + metricsNamespace + ".svc"
	return writeSelfSigned(dir, name, []net.IP{net.ParseIP(ip)}, []string{name})
}
