// Command kubefleet starts kubetest's API server with a fleet of spores on
// it and holds it until it is told to stop, so whole processes (sporectl,
// kubectl) can be timed against the same server from outside
// (.ci/compare.sh, `make compare`).
//
// It makes the fleet the way an operator would: `sporectl init --runtime
// kube` on a directory store and one `sporectl create ID… --wake`, with
// the server's admin kubeconfig; then the test kubelet binds every pod
// and reports it Running (and Ready, unless -ready=false). Nothing runs in
// the pods: every pod's address is -pod-ip, by default this machine's own
// first non-loopback IPv4 address, where nothing listens on the bridge's
// port (checked), so each bridge call through the API server's pod proxy
// is refused at once, the same on any machine (an address of 10.244/16
// would hang or be answered by whatever the machine's network does with
// it). When the fleet is up it writes -env, a file of NAME=value lines
// (KUBECONFIG, NAMESPACE, STORE, SELECTOR, PODS, POD_IP, READY, and
// ETCD_PID and APISERVER_PID, whose CPU a timing may read), and waits.
// SIGUSR1 turns every pod's readiness over (Ready pods' bridges are
// asked, others' are not) and writes -env again with the new READY;
// SIGINT or SIGTERM stops the server and removes what it made.
//
// It needs SPORECTL_KUBE_BIN_DIR (etcd, kube-apiserver), as kubetest does,
// and never touches a cluster it did not start.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/kube/kubetest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr))
}

// options are the command's flags.
type options struct {
	sporectl  string
	spores    int
	dir       string
	env       string
	namespace string
	ready     bool
	podIP     string
}

func run(ctx context.Context, args []string, stderr io.Writer) int {
	var o options
	fs := flag.NewFlagSet("kubefleet", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.sporectl, "sporectl", "", "the sporectl binary that makes the fleet (required)")
	fs.IntVar(&o.spores, "spores", 1001, "how many spores")
	fs.StringVar(&o.dir, "dir", "", "a directory for the store (required; the store is DIR/store)")
	fs.StringVar(&o.env, "env", "", "the file written when the fleet is up (default DIR/env)")
	fs.StringVar(&o.namespace, "namespace", "fleet", "the namespace of the spores")
	fs.BoolVar(&o.ready, "ready", true, "report every pod Ready as well as Running (its bridge is then asked, and does not answer)")
	fs.StringVar(&o.podIP, "pod-ip", "", "every pod's address, where nothing may listen on the bridge's port (default this machine's first non-loopback IPv4 address)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.sporectl == "" || o.dir == "" || o.spores < 1 || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "kubefleet: -sporectl and -dir are required, -spores must be at least 1, and no arguments")
		return 2
	}
	var err error
	if o.dir, err = filepath.Abs(o.dir); err != nil {
		fmt.Fprintf(stderr, "kubefleet: %v\n", err)
		return 1
	}
	if o.env == "" {
		o.env = filepath.Join(o.dir, "env")
	}
	if o.podIP == "" {
		if o.podIP, err = hostIP(); err != nil {
			fmt.Fprintf(stderr, "kubefleet: %v; give one with -pod-ip\n", err)
			return 1
		}
	}
	if err := refused(o.podIP, kube.BridgePort); err != nil {
		fmt.Fprintf(stderr, "kubefleet: %v\n", err)
		return 1
	}
	f, err := up(ctx, o, stderr)
	if f != nil {
		defer f.srv.Stop()
	}
	if err != nil {
		fmt.Fprintf(stderr, "kubefleet: %v\n", err)
		return 1
	}
	flip := make(chan os.Signal, 1)
	signal.Notify(flip, syscall.SIGUSR1)
	defer signal.Stop(flip)
	for {
		select {
		case <-ctx.Done():
			_ = os.Remove(o.env)
			return 0
		case <-flip:
			t0 := time.Now()
			if err := f.setReady(ctx, !f.ready); err != nil {
				fmt.Fprintf(stderr, "kubefleet: %v\n", err)
				return 1
			}
			fmt.Fprintf(stderr, "kubefleet: %d pods Running (ready: %t) in %.1fs\n", len(f.pods), f.ready, time.Since(t0).Seconds())
		}
	}
}

// fleet is a running server with the spores on it.
type fleet struct {
	srv     *kubetest.Server
	kubelet *kubetest.Kubelet
	pods    []string
	ready   bool
	env     string
	store   string
	podIP   string
}

// setReady reports every pod Running, Ready or not, and writes the env
// file saying which.
func (f *fleet) setReady(ctx context.Context, ready bool) error {
	if err := each(len(f.pods), 32, func(i int) error { return f.kubelet.Run(ctx, f.pods[i], ready) }); err != nil {
		return err
	}
	f.ready = ready
	return f.writeEnv()
}

// writeEnv writes the env file whole, by a rename, so a reader never
// sees half of it.
func (f *fleet) writeEnv() error {
	pids := f.srv.PIDs() // etcd, then the API server, in the order they started
	if len(pids) != 2 {
		return fmt.Errorf("the server runs %d processes, want etcd and kube-apiserver", len(pids))
	}
	env := fmt.Sprintf("KUBECONFIG=%s\nNAMESPACE=%s\nSTORE=%s\nSELECTOR=%s\nPODS=%d\nPOD_IP=%s\nREADY=%t\nETCD_PID=%d\nAPISERVER_PID=%d\n",
		f.srv.Kubeconfig, f.kubelet.Namespace, f.store, selector(), len(f.pods), f.podIP, f.ready, pids[0], pids[1])
	tmp := f.env + ".tmp"
	if err := os.WriteFile(tmp, []byte(env), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, f.env)
}

// up starts the server, makes the fleet and writes the env file. The
// returned fleet, when not nil, must be stopped even with an error.
func up(ctx context.Context, o options, log io.Writer) (*fleet, error) {
	began := time.Now()
	srv, err := kubetest.Start(ctx)
	if err != nil {
		return nil, fmt.Errorf("start the API server: %w", err)
	}
	f := &fleet{srv: srv, env: o.env, podIP: o.podIP, ready: o.ready, store: filepath.Join(o.dir, "store")}
	fmt.Fprintf(log, "kubefleet: API server ready in %.1fs\n", time.Since(began).Seconds())
	admin, err := kubernetes.NewForConfig(srv.Config)
	if err != nil {
		return f, err
	}
	if err := namespace(ctx, admin, o.namespace); err != nil {
		return f, err
	}

	sporectl := func(args ...string) error {
		cmd := exec.CommandContext(ctx, o.sporectl, append([]string{"--store", f.store}, args...)...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+srv.Kubeconfig)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = io.Discard, &out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("sporectl %s: %w\n%s", args[0], err, out.String())
		}
		return nil
	}
	if err := sporectl("init", "--runtime", "kube", "-n", o.namespace, "--agent", "echo", "--no-operator"); err != nil {
		return f, err
	}
	ids := make([]string, o.spores)
	for i := range ids {
		ids[i] = fmt.Sprintf("spore-%05d", i)
	}
	t0 := time.Now()
	if err := sporectl(append([]string{"create"}, append(ids, "--wake")...)...); err != nil {
		return f, err
	}
	fmt.Fprintf(log, "kubefleet: %d spores created and woken in %.1fs\n", len(ids), time.Since(t0).Seconds())

	t1 := time.Now()
	f.kubelet = &kubetest.Kubelet{Client: admin, Namespace: o.namespace, IP: o.podIP}
	for _, id := range ids {
		f.pods = append(f.pods, kube.ObjectName(id))
	}
	if err := each(len(f.pods), 32, func(i int) error { return f.kubelet.Schedule(ctx, f.pods[i]) }); err != nil {
		return f, err
	}
	if err := each(len(f.pods), 32, func(i int) error { return f.kubelet.Run(ctx, f.pods[i], o.ready) }); err != nil {
		return f, err
	}
	pods, err := admin.CoreV1().Pods(o.namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return f, fmt.Errorf("list pods: %w", err)
	}
	running := 0
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning {
			running++
		}
	}
	if running != len(ids) || len(pods.Items) != len(ids) {
		return f, fmt.Errorf("%d of %d pods Running, %d pods in all", running, len(ids), len(pods.Items))
	}
	fmt.Fprintf(log, "kubefleet: %d pods Running (ready: %t) in %.1fs\n", running, o.ready, time.Since(t1).Seconds())
	return f, f.writeEnv()
}

// hostIP is the first IPv4 address of an interface that is up and not
// loopback: the API server's pod proxy refuses loopback and link-local
// addresses before dialing, so those would not test a dial.
func hostIP() (string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return "", fmt.Errorf("list interfaces: %w", err)
	}
	for _, i := range ifs {
		if i.Flags&net.FlagUp == 0 || i.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := i.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
				return n.IP.String(), nil
			}
		}
	}
	return "", errors.New("no IPv4 address outside loopback")
}

// refused checks that a connection to ip:port is refused, so no bridge
// (nor anything else) answers the pods' calls.
func refused(ip string, port int) error {
	addr := net.JoinHostPort(ip, strconv.Itoa(port))
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("something listens on %s: the pods' bridges must not answer; give another -pod-ip", addr)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("dial %s: %v (want the connection refused); give another -pod-ip", addr, err)
	}
	return nil
}

// selector picks sporectl's spore pods, as the kube runtime's LIST does.
func selector() string {
	return kube.LabelManagedBy + "=" + kube.ManagedByValue + "," + kube.LabelComponent + "=" + kube.ComponentSpore
}

// namespace creates ns with the "default" service account a
// controller-manager would have made (the ServiceAccount admission plugin
// refuses pods without it; kubetest's server runs no controllers).
func namespace(ctx context.Context, cs kubernetes.Interface, ns string) error {
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create the default service account in %s: %w", ns, err)
	}
	return nil
}

// each runs fn(0…n-1) on workers goroutines and joins the errors.
func each(n, workers int, fn func(i int) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		next = make(chan int)
	)
	for range min(workers, n) {
		wg.Go(func() {
			for i := range next {
				if err := fn(i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}
