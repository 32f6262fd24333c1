package reconcile

import (
	"context"
	"strings"
	"time"
)

// HostRuntime is what a runtime offers besides Runtime for the [arch]'s
// `mycologist hosts` and `host-logs` (served by mycelia): sporectl's own
// pods (kube) or process trees (local), with what the platform says of
// their CPU, memory and restarts. It is an optional interface of a
// Runtime, found with a type assertion; it lives here, beside Runtime, so
// that the runtimes implement it without importing the API that serves
// it.
type HostRuntime interface {
	// Hosts lists every pod or process tree that is sporectl's (never
	// anything else of the namespace or machine). It never reads a
	// process's environment or a Secret, so it holds no token.
	Hosts(ctx context.Context) (HostList, error)
	// HostLogs is the last tail lines (tail >= 1) of the runtime log of
	// the host called name (a Host.Name, or its spore id), at most
	// MaxHostLogBytes. A name that is not sporectl's is state.ErrNotFound.
	HostLogs(ctx context.Context, name string, tail int) (string, error)
}

// MaxHostLogBytes caps the text of one host's logs, as read by a runtime
// and as answered; the oldest lines go first.
const MaxHostLogBytes = 1 << 20

// Host is one pod (kube) or process tree (local) of sporectl's. It is
// also the wire form of GET /api/mycologist/hosts's entries.
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

// HostList is what Hosts returns, and what GET /api/mycologist/hosts
// answers.
type HostList struct {
	// Runtime is "local" or "kube".
	Runtime string `json:"runtime"`
	Hosts   []Host `json:"hosts"`
	// Metrics says where CPU and memory come from, or why they are
	// absent ("metrics API absent").
	Metrics string `json:"metrics"`
}

// TailText is the last n lines of text, within max bytes (cutting at a
// line); cut says something was left out for the byte bound. A runtime
// cuts the log it read with it, and serve its answer.
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
