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
	"net"
	"os"
	"path/filepath"
	"time"
)

// writeServingCert writes a self-signed certificate for 127.0.0.1 and
// returns its PEM so clients can trust exactly this server. It also
// names the addresses pods dial on a real node (the node's bridge
// address, the kubernetes Service's ClusterIP and its DNS names), so an
// in-cluster client (serve, the reconcile CronJob) verifies it with the
// service account's ca.crt.
func writeServingCert(dir string) (certPEM []byte, certFile, keyFile string, err error) {
	return writeSelfSigned(dir, "kubetest-apiserver",
		[]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(nodeIP), net.ParseIP(KubernetesServiceIP)},
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"})
}

// writeSelfSigned writes serving.crt and serving.key into dir: a
// self-signed serving certificate for ips and names, its own CA, and
// returns its PEM for the clients that must trust exactly it.
func writeSelfSigned(dir, commonName string, ips []net.IP, names []string) (certPEM []byte, certFile, keyFile string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, "", "", fmt.Errorf("%s serving key: %w", commonName, err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(now.UnixNano()),
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           ips,
		DNSNames:              names,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, "", "", fmt.Errorf("%s serving cert: %w", commonName, err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	certFile, keyFile = filepath.Join(dir, "serving.crt"), filepath.Join(dir, "serving.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		return nil, "", "", err
	}
	if err := writeKey(keyFile, key); err != nil {
		return nil, "", "", err
	}
	return certPEM, certFile, keyFile, nil
}

// clientCA is a CA's certificate and one client certificate and key it
// signed, as files.
type clientCA struct{ ca, clientCert, clientKey string }

// writeClientCA makes a CA named caName and one client certificate from
// it for subject, written to the files of c: for a server that trusts
// exactly one client (the kubelet, the API server's, an aggregated API,
// the API server as the front proxy).
func writeClientCA(c clientCA, caName string, subject pkix.Name) (clientCA, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return c, fmt.Errorf("%s key: %w", caName, err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(now.UnixNano()),
		Subject:               pkix.Name{CommonName: caName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return c, fmt.Errorf("%s: %w", caName, err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return c, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return c, fmt.Errorf("%s client key: %w", subject.CommonName, err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano() + 1),
		Subject:      subject,
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		return c, fmt.Errorf("%s client certificate: %w", subject.CommonName, err)
	}
	if err := os.WriteFile(c.ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		return c, err
	}
	if err := os.WriteFile(c.clientCert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		return c, err
	}
	return c, writeKey(c.clientKey, key)
}

// writeServiceAccountKeys writes the key pair the API server signs and
// verifies service-account tokens with.
func writeServiceAccountKeys(dir string) (privFile, pubFile string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", fmt.Errorf("service-account key: %w", err)
	}
	privFile, pubFile = filepath.Join(dir, "sa.key"), filepath.Join(dir, "sa.pub")
	if err := writeKey(privFile, key); err != nil {
		return "", "", err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", "", err
	}
	if err := os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600); err != nil {
		return "", "", err
	}
	return privFile, pubFile, nil
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}

// freePort asks the kernel for an unused loopback port. Another process
// could take it before the server binds; start retries once on failure.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
