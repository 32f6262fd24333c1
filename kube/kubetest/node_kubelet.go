package kubetest

import (
	"crypto/x509/pkix"
	"fmt"
	"os"
	"path/filepath"
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

// writeKubeletClientCerts makes a CA the kubelet trusts for clients and
// the API server's client certificate from it, so only the API server can
// call the kubelet (logs, exec); the kubelet's own serving certificate is
// self-signed and the API server, given no kubelet CA, does not check it.
func writeKubeletClientCerts(dir string) (clientCA, error) {
	return writeClientCA(clientCA{
		ca:         filepath.Join(dir, "kubelet-client-ca.crt"),
		clientCert: filepath.Join(dir, "apiserver-kubelet-client.crt"),
		clientKey:  filepath.Join(dir, "apiserver-kubelet-client.key"),
	}, "kubetest-kubelet-client-ca", pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}})
}
