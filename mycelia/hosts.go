package mycelia

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sporectl/sporectl/state"
)

// HostRuntime is what a runtime offers the [arch]'s `mycologist hosts` and
// `host-logs`: sporectl's own pods (kube) or process trees (local), with
// what the platform says of their CPU, memory and restarts. It is an
// optional interface of a reconcile.Runtime, found with a type assertion;
// a runtime without it answers 501.
type HostRuntime interface {
	// Hosts lists every pod or process tree that is sporectl's (never
	// anything else of the namespace or machine). It never reads a
	// process's environment or a Secret, so it holds no token.
	Hosts(ctx context.Context) (HostList, error)
	// HostLogs is the last tail lines (1..MaxHostTail) of the runtime
	// log of the host called name (a Host.Name, or its spore id), at most
	// MaxHostLogBytes. A name that is not sporectl's is state.ErrNotFound.
	HostLogs(ctx context.Context, name string, tail int) (string, error)
}

// Bounds of GET /api/mycologist/hosts/{name}/logs.
const (
	DefaultHostTail = 100
	MaxHostTail     = 5000
	// MaxHostLogBytes caps the text of one answer; the oldest lines go
	// first.
	MaxHostLogBytes = 1 << 20
)

// Host is one pod (kube) or process tree (local) of sporectl's.
type Host struct {
	// Name is the pod's name (kube) or "bridge of ID" (local).
	Name string `json:"name"`
	// Spore is the spore it runs, when it runs one.
	Spore string `json:"spore,omitempty"`
	// State is the pod's state as reconcile sees it (Running, Pending,
	// Failed, …).
	State string `json:"state"`
	// CPUCores is the CPU used now, in cores (kube: the metrics API),
	// when known.
	CPUCores *float64 `json:"cpu_cores,omitempty"`
	// CPUSeconds is the CPU time used since each process started, summed
	// over the tree (local: utime+stime of /proc/PID/stat), when known.
	// Not a rate: a rate needs two samples.
	CPUSeconds *float64 `json:"cpu_seconds,omitempty"`
	// MemoryBytes is the memory in use, when known: the metrics API's
	// working set (kube), the resident set summed over the tree (local).
	MemoryBytes *int64 `json:"memory_bytes,omitempty"`
	Restarts    int    `json:"restarts"`
	// Processes counts the processes of the tree (local).
	Processes int       `json:"processes,omitempty"`
	Started   time.Time `json:"started,omitzero"`
}

// HostList answers GET /api/mycologist/hosts.
type HostList struct {
	// Runtime is "local" or "kube".
	Runtime string `json:"runtime"`
	Hosts   []Host `json:"hosts"`
	// Metrics says where CPU and memory come from, or why they are
	// absent ("metrics API absent").
	Metrics string `json:"metrics"`
}

// HostLogs answers GET /api/mycologist/hosts/{name}/logs?tail=N.
type HostLogs struct {
	Name  string `json:"name"`
	Spore string `json:"spore,omitempty"`
	Tail  int    `json:"tail"`
	Text  string `json:"text"`
	// Cut: the text was cut to MaxHostLogBytes.
	Cut bool `json:"cut,omitempty"`
}

// CodeNotImplemented: the store's runtime offers no hosts (501).
const CodeNotImplemented = "not_implemented"

// hostRuntime is the store's runtime, built as a pass builds it, when it
// offers hosts.
func (s *Server) hostRuntime(ctx context.Context) (HostRuntime, error) {
	var settings state.Settings
	err := s.Store.View(ctx, func(tx state.Tx) error {
		var err error
		settings, err = tx.Settings(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	rt, err := s.Pass.Runtime(ctx, settings)
	if err != nil {
		s.logger().Warn("hosts: build the runtime", "err", err)
		return nil, errorf(http.StatusServiceUnavailable, CodeUnavailable, "the runtime cannot be reached now; try again")
	}
	hr, ok := rt.(HostRuntime)
	if !ok {
		return nil, errorf(http.StatusNotImplemented, CodeNotImplemented, "the %s runtime does not list its hosts", settings.Runtime)
	}
	return hr, nil
}

// hosts: GET /api/mycologist/hosts — sporectl's own pods or processes.
func (s *Server) hosts(c *call) (int, any, error) {
	hr, err := s.hostRuntime(c.ctx())
	if err != nil {
		return 0, nil, err
	}
	l, err := hr.Hosts(c.ctx())
	if err != nil {
		s.logger().Warn("hosts: list", "err", err)
		return 0, nil, errorf(http.StatusServiceUnavailable, CodeUnavailable, "the runtime could not list its hosts now; try again")
	}
	if l.Hosts == nil {
		l.Hosts = []Host{}
	}
	return http.StatusOK, l, nil
}

// hostLogs: GET /api/mycologist/hosts/{name}/logs?tail=N — the last lines
// of one host's runtime log. A name that is not one of sporectl's hosts
// is 404 without detail.
func (s *Server) hostLogs(c *call) (int, any, error) {
	tail := DefaultHostTail
	if v, ok := c.r.URL.Query()["tail"]; ok {
		n, err := strconv.Atoi(strings.Join(v, ","))
		if err != nil || n < 1 || n > MaxHostTail {
			return 0, nil, errorf(http.StatusBadRequest, CodeBadRequest, "tail must be a number from 1 to %d", MaxHostTail)
		}
		tail = n
	}
	notFound := errorf(http.StatusNotFound, CodeNotFound, "not found")
	hr, err := s.hostRuntime(c.ctx())
	if err != nil {
		return 0, nil, err
	}
	l, err := hr.Hosts(c.ctx())
	if err != nil {
		s.logger().Warn("host-logs: list", "err", err)
		return 0, nil, errorf(http.StatusServiceUnavailable, CodeUnavailable, "the runtime could not list its hosts now; try again")
	}
	var host *Host
	for i := range l.Hosts {
		if h := &l.Hosts[i]; h.Name == c.id || (h.Spore != "" && h.Spore == c.id) {
			host = h
			break
		}
	}
	if host == nil {
		return 0, nil, notFound
	}
	text, err := hr.HostLogs(c.ctx(), host.Name, tail)
	if errors.Is(err, state.ErrNotFound) {
		return 0, nil, notFound
	}
	if err != nil {
		s.logger().Warn("host-logs: read", "host", host.Name, "err", err)
		return 0, nil, errorf(http.StatusServiceUnavailable, CodeUnavailable, "the logs of %s cannot be read now; try again", host.Name)
	}
	res := HostLogs{Name: host.Name, Spore: host.Spore, Tail: tail}
	res.Text, res.Cut = TailText(text, tail, MaxHostLogBytes)
	return http.StatusOK, res, nil
}

// TailText is the last n lines of text, within max bytes (cutting at a
// line); cut says something was left out for the byte bound.
func TailText(text string, n, max int) (string, bool) {
	cut := false
	if len(text) > max {
		i := len(text) - max
		if nl := strings.IndexByte(text[i:], '\n'); nl >= 0 {
			i += nl + 1
		}
		text, cut = text[i:], true
	}
	body := strings.TrimSuffix(text, "\n")
	if body == "" {
		return text, cut
	}
	lines := 0
	for i := len(body) - 1; i >= 0; i-- {
		if body[i] == '\n' {
			if lines++; lines == n {
				return text[i+1:], cut
			}
		}
	}
	return text, cut
}
