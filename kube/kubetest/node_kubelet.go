package kubetest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// kubeletConfig is the node's KubeletConfiguration:
//   - failCgroupV1: false, these hosts are cgroup v1;
//   - cgroupfs, as containerd's SystemdCgroup = false (no systemd here);
//   - failSwapOn: false, a host may have swap;
//   - it serves only on the bridge's address, and trusts only the API
//     server's client certificate (x509, no anonymous access);
//   - every directory it would write outside its root dir (pod logs,
//     volume plugins) is under the node's directory;
//   - image GC never runs (the images are imported, not pullable) and
//     eviction thresholds are low, so a busy disk does not evict tests;
//   - no iptables chains (KUBE-FIREWALL, the canaries): nothing here needs
//     them, and they would outlive the node;
//   - status every 2s, so a test sees Ready and pod changes quickly.
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupsPerQOS: true
enforceNodeAllocatable: ["pods"]
containerRuntimeEndpoint: unix://%[1]s
address: %[2]s
port: 10250
readOnlyPort: 0
healthzPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: %[3]q}
authorization:
  mode: AlwaysAllow
failSwapOn: false
makeIPTablesUtilChains: false
podLogsDir: %[4]q
volumePluginDir: %[5]q
evictionHard: {"memory.available": "50Mi", "nodefs.available": "1%%", "imagefs.available": "1%%", "nodefs.inodesFree": "1%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
rotateCertificates: false
serverTLSBootstrap: false
registerNode: true
maxPods: %[6]d
resolvConf: ""
clusterDomain: cluster.local
syncFrequency: 5s
fileCheckFrequency: 10s
nodeStatusUpdateFrequency: 2s
`

func (n *Node) writeKubeletConfig(clientCA string, maxPods int) (string, error) {
	logs, plugins := filepath.Join(n.dir, "pod-logs"), filepath.Join(n.dir, "volume-plugins")
	for _, d := range []string{logs, plugins} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
	}
	p := filepath.Join(n.dir, "kubelet.yaml")
	cfg := fmt.Sprintf(kubeletConfig, n.containerdSocket(), n.IP, clientCA, logs, plugins, maxPods)
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		return "", fmt.Errorf("write the kubelet's config: %w", err)
	}
	return p, nil
}

type kubeletCerts struct{ ca, clientCert, clientKey string }

// writeKubeletClientCerts makes a CA the kubelet trusts for clients and
// the API server's client certificate from it, so only the API server can
// call the kubelet (logs, exec); the kubelet's own serving certificate is
// self-signed and the API server, given no kubelet CA, does not check it.
func writeKubeletClientCerts(dir string) (kubeletCerts, error) {
	c := kubeletCerts{
		ca:         filepath.Join(dir, "kubelet-client-ca.crt"),
		clientCert: filepath.Join(dir, "apiserver-kubelet-client.crt"),
		clientKey:  filepath.Join(dir, "apiserver-kubelet-client.key"),
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return c, fmt.Errorf("kubelet client CA key: %w", err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(now.UnixNano()),
		Subject:               pkix.Name{CommonName: "kubetest-kubelet-client-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return c, fmt.Errorf("kubelet client CA: %w", err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return c, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return c, fmt.Errorf("kubelet client key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano() + 1),
		Subject:      pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return c, fmt.Errorf("kubelet client certificate: %w", err)
	}
	if err := os.WriteFile(c.ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		return c, err
	}
	if err := os.WriteFile(c.clientCert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return c, err
	}
	return c, writeKey(c.clientKey, key)
}
