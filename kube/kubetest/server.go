package kubetest

import (
	"context"
	"crypto/rand"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"

	"github.com/sporectl/sporectl/internal/childproc"
)

// Server is one etcd plus one kube-apiserver on loopback ports, with
// files in a private temporary directory.
type Server struct {
	// Config authenticates as an admin (group system:masters) with a
	// static token; tests derive restricted configs from it.
	Config *rest.Config
	// Kubeconfig is a file for kubectl holding the same admin credentials.
	Kubeconfig string
	dir        string
	procs      []*proc
}

type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed once Wait returned
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Start launches etcd and the API server and waits until /readyz passes,
// which includes the RBAC bootstrap roles.
func Start(ctx context.Context) (*Server, error) {
	return StartWithArgs(ctx)
}

// StartWithArgs is Start with extra kube-apiserver flags (a real node's
// harness adds its kubelet client settings).
func StartWithArgs(ctx context.Context, extra ...string) (*Server, error) {
	var lastErr error
	for attempt := 0; attempt < 2; attempt++ { // a stolen free port is the usual failure
		s, err := start(ctx, extra)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

func start(ctx context.Context, extra []string) (s *Server, err error) {
	etcdBin, err := Binary("etcd")
	if err != nil {
		return nil, err
	}
	apiBin, err := Binary("kube-apiserver")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "kubetest-")
	if err != nil {
		return nil, err
	}
	s = &Server{dir: dir}
	defer func() {
		if err != nil {
			s.Stop()
		}
	}()

	clientPort, err1 := freePort()
	peerPort, err2 := freePort()
	securePort, err3 := freePort()
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, fmt.Errorf("pick ports: %w", err)
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	if err := s.spawn(etcdBin, "etcd.log",
		"--name=kubetest",
		"--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=kubetest="+peerURL,
		"--log-level=warn",
	); err != nil {
		return nil, err
	}

	certPEM, certFile, keyFile, err := writeServingCert(dir)
	if err != nil {
		return nil, err
	}
	saKey, saPub, err := writeServiceAccountKeys(dir)
	if err != nil {
		return nil, err
	}
	fp, err := writeFrontProxyCerts(dir)
	if err != nil {
		return nil, err
	}
	token := randomToken()
	tokens := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(token+`,kubetest-admin,kubetest-admin,"system:masters"`+"\n"), 0o600); err != nil {
		return nil, err
	}
	if err := s.spawn(apiBin, "kube-apiserver.log", append([]string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(securePort),
		"--tls-cert-file=" + certFile, "--tls-private-key-file=" + keyFile,
		"--token-auth-file=" + tokens,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + saPub,
		"--service-account-signing-key-file=" + saKey,
		"--api-audiences=https://kubernetes.default.svc",
		// In the benchmarking range, beside the node's pod subnet: with
		// kube-proxy running (a real node), a Service's address becomes a
		// DNAT rule in the machine's own nat table, so it must be an
		// address nothing real on any network uses.
		"--service-cluster-ip-range=" + ServiceCIDR,
		"--endpoint-reconciler-type=none",
		// Aggregation (an APIService such as the real node's
		// metrics-server): the API server proxies to an aggregated server
		// with a front-proxy client certificate, the user in request
		// headers the aggregated server trusts only from that CA, and it
		// dials the Service's endpoint, not its cluster IP (no kube-proxy
		// routes 10.96.0.0/16 here). Two more small keys: the fast
		// harness's start measured the same, within the machine's noise.
		"--requestheader-client-ca-file=" + fp.ca,
		"--requestheader-allowed-names=" + frontProxyClientName,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + fp.clientCert,
		"--proxy-client-key-file=" + fp.clientKey,
		"--enable-aggregator-routing=true",
		"--v=0",
	}, extra...)...); err != nil {
		return nil, err
	}

	s.Config = &rest.Config{
		Host:            "https://127.0.0.1:" + strconv.Itoa(securePort),
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: certPEM},
		QPS:             -1, // no client-side limit: tests drive fleets of 1,000
	}
	if err := s.writeKubeconfig(certFile, token); err != nil {
		return nil, err
	}
	if err := s.waitReady(ctx, 90*time.Second); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Server) spawn(bin, logName string, args ...string) error {
	logFile, err := os.Create(filepath.Join(s.dir, logName))
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own process group, and killed with the test binary, so a
	// crashed test leaves no server behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p := &proc{name: filepath.Base(bin), cmd: cmd, done: make(chan struct{})}
	if err := childproc.Start(cmd, func(error) { logFile.Close(); close(p.done) }); err != nil {
		logFile.Close()
		return fmt.Errorf("start %s: %w", filepath.Base(bin), err)
	}
	s.procs = append(s.procs, p)
	return nil
}

func (s *Server) waitReady(ctx context.Context, limit time.Duration) error {
	hc, err := rest.HTTPClientFor(s.Config)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	var last string
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.Config.Host+"/readyz", nil)
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		for _, p := range s.procs {
			if p.exited() {
				return fmt.Errorf("%s exited before the API server was ready:\n%s", p.name, s.LogTail(p.name))
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("API server not ready after %s (last: %s):\n%s", limit, last, s.LogTail("kube-apiserver"))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// LogTail returns the end of the named process's log, for failure output.
func (s *Server) LogTail(name string) string { return logTail(s.dir, name) }

// logTail is the last 4000 bytes of dir's log of the process name.
func logTail(dir, name string) string {
	b, err := os.ReadFile(filepath.Join(dir, filepath.Base(name)+".log"))
	if err != nil {
		return err.Error()
	}
	const max = 4000
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

func (s *Server) writeKubeconfig(caFile, token string) error {
	s.Kubeconfig = filepath.Join(s.dir, "kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: kubetest
  cluster:
    server: %s
    certificate-authority: %s
users:
- name: admin
  user:
    token: %s
contexts:
- name: kubetest
  context: {cluster: kubetest, user: admin}
current-context: kubetest
`, s.Config.Host, caFile, token)
	return os.WriteFile(s.Kubeconfig, []byte(cfg), 0o600)
}

// Stop kills the API server, then etcd, waits for both, and removes the
// directory. It is safe to call more than once.
func (s *Server) Stop() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		p := s.procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	}
	s.procs = nil
	if s.dir != "" && !strings.Contains(os.Getenv("SPORECTL_KUBETEST_KEEP"), "1") {
		_ = os.RemoveAll(s.dir)
	}
}

// frontProxyClientName is the front-proxy client certificate's common
// name, the only one an aggregated server accepts request headers from.
const frontProxyClientName = "front-proxy-client"

// writeFrontProxyCerts makes the front-proxy CA and the API server's
// client certificate from it, with which it proxies to aggregated APIs.
func writeFrontProxyCerts(dir string) (clientCA, error) {
	return writeClientCA(clientCA{
		ca:         filepath.Join(dir, "front-proxy-ca.crt"),
		clientCert: filepath.Join(dir, "front-proxy-client.crt"),
		clientKey:  filepath.Join(dir, "front-proxy-client.key"),
	}, "kubetest-front-proxy-ca", pkix.Name{CommonName: frontProxyClientName})
}

func randomToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// PIDs are the process ids of etcd and the API server (for tests that
// check nothing is left running).
func (s *Server) PIDs() []int {
	var out []int
	for _, p := range s.procs {
		out = append(out, p.cmd.Process.Pid)
	}
	return out
}
