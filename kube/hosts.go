package kube

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

var _ reconcile.HostRuntime = (*Runtime)(nil)

// Metrics texts of HostList.Metrics.
const (
	MetricsFromAPI = "metrics API (metrics.k8s.io/v1beta1): cpu_cores is the pod's CPU use now, memory_bytes its working set"
	MetricsAbsent  = "metrics API absent (metrics.k8s.io answers 404): no CPU or memory figures"
	// MetricsNotReady: the APIService is registered but its server does
	// not answer (starting, or down): the aggregator's 503.
	MetricsNotReady = "metrics API not ready (metrics.k8s.io answers 503: its server is starting or down): no CPU or memory figures"
	// MetricsNotYet follows MetricsFromAPI ("; ") when some listed pods
	// are not in the API's answer: metrics-server serves a pod only once
	// it scraped it twice (CPU is a rate of two samples), so a new pod
	// has no figures for its first 10-60 s (one or two resolutions).
	MetricsNotYet = "no figures yet for %s (not scraped twice since it started)"
	// maxNotYetNames bounds the pods MetricsNotYet names.
	maxNotYetNames = 5
)

// Hosts lists sporectl's own spore pods (the LIST Observe makes; pods
// with the labels but not every ownership mark are left out), their state
// and restarts from the pod status, and their CPU and memory from the
// metrics API when it is there. The metrics API failing never fails the
// list: Metrics says why the figures are absent.
func (r *Runtime) Hosts(ctx context.Context) (reconcile.HostList, error) {
	var pods *corev1.PodList
	err := retryTransient(ctx, func() (err error) {
		pods, err = r.core.pods().list(ctx, fleetSelector())
		return err
	})
	if err != nil {
		return reconcile.HostList{}, fmt.Errorf("hosts: list pods in %s: %w", r.opts.Namespace, err)
	}
	usage, note := r.podMetrics(ctx)
	out := reconcile.HostList{Runtime: "kube", Hosts: []reconcile.Host{}, Metrics: note}
	for i := range pods.Items {
		p := &pods.Items[i]
		id := p.Labels[LabelSpore]
		if id == "" || !Owned(p.ObjectMeta, id) {
			continue
		}
		o := podObservation(id, p, time.Now())
		h := reconcile.Host{Name: p.Name, Spore: id, State: string(o.State), Restarts: o.Restarts}
		if p.Status.StartTime != nil {
			h.Started = p.Status.StartTime.UTC()
		}
		if u, ok := usage[p.Name]; ok {
			cpu, mem := u.cpu, u.mem
			h.CPUCores, h.MemoryBytes = &cpu, &mem
		}
		out.Hosts = append(out.Hosts, h)
	}
	sort.Slice(out.Hosts, func(i, j int) bool { return out.Hosts[i].Name < out.Hosts[j].Name })
	if usage != nil {
		out.Metrics += notYet(out.Hosts)
	}
	return out, nil
}

// notYet is "; " and MetricsNotYet naming the hosts (sorted) the metrics
// API answered no figures for, or "" when every host has them.
func notYet(hosts []reconcile.Host) string {
	var names []string
	for _, h := range hosts {
		if h.MemoryBytes == nil {
			names = append(names, h.Name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	list := strings.Join(names, ", ")
	if len(names) > maxNotYetNames {
		list = strings.Join(names[:maxNotYetNames], ", ") + fmt.Sprintf(" and %d more", len(names)-maxNotYetNames)
	}
	return "; " + fmt.Sprintf(MetricsNotYet, list)
}

type podUsage struct {
	cpu float64
	mem int64
}

// podMetrics GETs /apis/metrics.k8s.io/v1beta1/namespaces/NS/pods (with
// the fleet's selector) through the core client's REST client: no client
// of the metrics API is needed. It says where the figures come from, or why
// there are none (the map is nil then). A pod metrics-server has not
// scraped twice yet is not in its answer at all (not a 404).
func (r *Runtime) podMetrics(ctx context.Context) (map[string]podUsage, string) {
	raw, err := r.core.rest.Get().AbsPath("/apis/metrics.k8s.io/v1beta1/namespaces", r.opts.Namespace, "pods").
		Param("labelSelector", fleetSelector()).
		SetHeader("Accept", "application/json").
		Do(ctx).Raw()
	switch {
	case apierrors.IsNotFound(err):
		return nil, MetricsAbsent
	case apierrors.IsServiceUnavailable(err):
		return nil, MetricsNotReady
	case apierrors.IsForbidden(err):
		return nil, "metrics API not allowed (give the Role get/list on metrics.k8s.io pods): no CPU or memory figures"
	case err != nil:
		return nil, "metrics API unavailable (" + oneLine(err.Error()) + "): no CPU or memory figures"
	}
	var list struct {
		Items []struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
			Containers []struct {
				Usage map[string]string `json:"usage"`
			} `json:"containers"`
		} `json:"items"`
	}
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&list); err != nil {
		return nil, "metrics API answered what is not a PodMetricsList: no CPU or memory figures"
	}
	out := map[string]podUsage{}
	for _, it := range list.Items {
		var u podUsage
		for _, c := range it.Containers {
			if q, err := resource.ParseQuantity(c.Usage["cpu"]); err == nil {
				u.cpu += q.AsApproximateFloat64()
			}
			if q, err := resource.ParseQuantity(c.Usage["memory"]); err == nil {
				u.mem += q.Value()
			}
		}
		out[it.Metadata.Name] = u
	}
	return out, MetricsFromAPI
}

// oneLine keeps an error short and on one line.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// HostLogs is the last tail lines of the bridge container's log of pod
// name (a spore pod's name, or its spore id), through pods/log; only a
// pod with every ownership mark is read.
func (r *Runtime) HostLogs(ctx context.Context, name string, tail int) (string, error) {
	id := strings.TrimPrefix(name, ObjectName(""))
	if state.ValidateID(id) != nil {
		return "", fmt.Errorf("host %q: %w", name, state.ErrNotFound)
	}
	pods := r.core.pods()
	p, err := pods.get(ctx, ObjectName(id))
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("logs of spore %s: %w", id, state.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("logs of spore %s: read pod: %w", id, err)
	}
	if !Owned(p.ObjectMeta, id) {
		return "", fmt.Errorf("logs of spore %s: %w (%w)", id, state.ErrNotFound, &NotOwnedError{Kind: "Pod", Namespace: p.Namespace, Name: p.Name})
	}
	lines, limit := int64(tail), int64(reconcile.MaxHostLogBytes)
	b, err := r.core.podLogs(p.Name, &corev1.PodLogOptions{Container: containerName, TailLines: &lines, LimitBytes: &limit}).DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("logs of spore %s: %w", id, err)
	}
	// The bridge logs no token; this guards against what its agent's
	// stderr might print, as `sporectl logs` does.
	return reconcile.Redact(string(b), r.secrets(ctx, id)), nil
}
