package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

var _ reconcile.HostRuntime = (*Runtime)(nil)

// hostPrefix names a spore's process tree as a host: "bridge of ID".
const hostPrefix = "bridge of "

// HostMetrics says what the local runtime's CPU and memory figures are.
const HostMetrics = "local /proc: cpu_seconds is the CPU time (utime+stime) each tree's live processes used since they started, not a rate (a rate needs two samples); memory_bytes is their resident set (statm), summed over the tree"

// Hosts lists every spore's process tree of this root (those Observe
// finds, orphans too): its state, processes, CPU time and resident
// memory from one more scan of /proc. Only /proc/PID/stat, statm and
// environ (for the mark, never read out) are read.
func (r *Runtime) Hosts(ctx context.Context) (reconcile.HostList, error) {
	obs, err := r.Observe(ctx, nil)
	if err != nil {
		return reconcile.HostList{}, err
	}
	type usage struct {
		ticks  uint64
		rss    int64
		n      int
		bridge *procStat // the oldest process running its bridge command
	}
	use := map[string]*usage{}
	liveProcesses(func(st procStat) bool {
		id, ok := markOf(st.PID, r.home)
		if !ok {
			return false
		}
		u := use[id]
		if u == nil {
			u = &usage{}
			use[id] = u
		}
		u.n++
		u.ticks += st.UTime + st.STime
		if rss, ok := residentBytes(st.PID); ok {
			u.rss += rss
		}
		if _, ok := bridgeAddr(st, r.home(id)); ok && (u.bridge == nil || st.StartTime < u.bridge.StartTime) {
			b := st
			u.bridge = &b
		}
		return false
	})
	now := time.Now().UTC()
	out := reconcile.HostList{Runtime: "local", Hosts: []reconcile.Host{}, Metrics: HostMetrics}
	for id, po := range obs.Spores {
		h := reconcile.Host{Name: hostPrefix + id, Spore: id, State: string(po.State), Restarts: po.Restarts}
		if u := use[id]; u != nil {
			h.Processes = u.n
			cpu := float64(u.ticks) / clockTicks
			h.CPUSeconds = &cpu
			if u.rss > 0 {
				rss := u.rss
				h.MemoryBytes = &rss
			}
			if u.bridge != nil {
				if a, ok := age(*u.bridge); ok && a >= 0 {
					h.Started = now.Add(-a).Truncate(time.Second)
				}
			}
		}
		if rf, err := readRunFile(r.runPath(id, ".json")); err == nil && r.verified(id, rf) && !rf.Started.IsZero() {
			h.Started = rf.Started.UTC()
		}
		out.Hosts = append(out.Hosts, h)
	}
	sort.Slice(out.Hosts, func(i, j int) bool { return out.Hosts[i].Name < out.Hosts[j].Name })
	return out, nil
}

// HostLogs is the last tail lines of the bridge log run/<id>.log of the
// host "bridge of ID" (or ID), reading at most reconcile.MaxHostLogBytes
// from its end.
func (r *Runtime) HostLogs(ctx context.Context, name string, tail int) (string, error) {
	id := strings.TrimPrefix(name, hostPrefix)
	if state.ValidateID(id) != nil {
		return "", fmt.Errorf("host %q: %w", name, state.ErrNotFound)
	}
	f, err := os.Open(r.runPath(id, ".log"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("logs of %s: %w", id, state.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("logs of %s: %w", id, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("logs of %s: %w", id, err)
	}
	off := max(fi.Size()-reconcile.MaxHostLogBytes, 0)
	b, err := io.ReadAll(io.NewSectionReader(f, off, reconcile.MaxHostLogBytes))
	if err != nil {
		return "", fmt.Errorf("logs of %s: %w", id, err)
	}
	text := string(b)
	if off > 0 {
		// The first line read is only the end of one.
		if nl := strings.IndexByte(text, '\n'); nl >= 0 {
			text = text[nl+1:]
		}
	}
	// The bridge logs no token; this guards against what its agent's
	// stderr might print, as `sporectl logs` does.
	text = reconcile.Redact(text, r.secrets(id))
	text, _ = reconcile.TailText(text, tail, reconcile.MaxHostLogBytes)
	return text, nil
}
