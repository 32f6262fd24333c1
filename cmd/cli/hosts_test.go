package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/mycelia"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/reconciletest"
	"github.com/sporectl/sporectl/state"
)

// hostsRuntime adds reconcile.HostRuntime to the fake runtime: a host
// "bridge of ID" per spore it observes (memory and CPU time for awake
// ones), whose log is three lines naming it.
type hostsRuntime struct{ *reconciletest.Runtime }

func (r hostsRuntime) Hosts(ctx context.Context) (reconcile.HostList, error) {
	obs, err := r.Observe(ctx, nil)
	if err != nil {
		return reconcile.HostList{}, err
	}
	l := reconcile.HostList{Runtime: "local", Metrics: "fake: cpu_seconds is CPU time, not a rate"}
	mem, cpu := int64(3<<20), 1.5
	for id, po := range obs.Spores {
		l.Hosts = append(l.Hosts, reconcile.Host{Name: "bridge of " + id, Spore: id, State: string(po.State), Restarts: 2, MemoryBytes: &mem, CPUSeconds: &cpu})
	}
	return l, nil
}

func (r hostsRuntime) HostLogs(ctx context.Context, name string, tail int) (string, error) {
	id := strings.TrimPrefix(name, "bridge of ")
	obs, err := r.Observe(ctx, nil)
	if err != nil {
		return "", err
	}
	if _, ok := obs.Spores[id]; !ok {
		return "", state.ErrNotFound
	}
	text, _ := reconcile.TailText("one "+id+"\ntwo "+id+"\nthree "+id+"\n", tail, reconcile.MaxHostLogBytes)
	return text, nil
}

func TestMycologistHosts(t *testing.T) {
	c := newAPIColony(t)
	c.ok("create", "boss", "--rank", "arch", "--colony", "lab", "--wake")
	c.newToken("boss")

	table := c.asOK("boss", "mycologist", "hosts")
	require.Regexp(t, `(?m)^NAME\s+SPORE\s+STATE\s+CPU\s+MEMORY\s+RESTARTS\s+AGE$`, table)
	require.Regexp(t, `(?m)^bridge of a\s+a\s+Running\s+1\.50s used\s+3\.0Mi\s+2\s+`, table)
	require.Contains(t, table, "# local: fake: cpu_seconds is CPU time, not a rate\n")

	var l reconcile.HostList
	require.NoError(t, json.Unmarshal([]byte(c.asOK("boss", "mycologist", "hosts", "-o", "json")), &l))
	var names []string
	for _, h := range l.Hosts {
		names = append(names, h.Name)
	}
	require.Contains(t, names, "bridge of a")
	require.Contains(t, names, "bridge of boss")
	require.Equal(t, "local", l.Runtime)

	require.Equal(t, "two a\nthree a\n", c.asOK("boss", "mycologist", "host-logs", "bridge of a", "--tail", "2"))
	require.Equal(t, "one boss\ntwo boss\nthree boss\n", c.asOK("boss", "mycologist", "host-logs"), "without POD: its own")
	var hl mycelia.HostLogs
	require.NoError(t, json.Unmarshal([]byte(c.asOK("boss", "mycologist", "host-logs", "a", "--tail", "1", "-o", "json")), &hl))
	require.Equal(t, mycelia.HostLogs{Name: "bridge of a", Spore: "a", Tail: 1, Text: "three a\n"}, hl)

	for _, tc := range []struct {
		who  string
		args []string
		code int
		msg  string
	}{
		{"myco", []string{"mycologist", "hosts"}, ExitForbidden, "may not call"},
		{"lead", []string{"mycologist", "hosts"}, ExitForbidden, "may not call"},
		{"a", []string{"mycologist", "host-logs", "a"}, ExitForbidden, "may not call"},
		{"boss", []string{"mycologist", "host-logs", "kube-apiserver"}, ExitNotFound, "not found"},
		{"boss", []string{"mycologist", "host-logs", "a", "--tail", "0"}, ExitUsage, "--tail"},
		{"boss", []string{"mycologist", "host-logs", "a", "--tail", "5001"}, ExitUsage, "--tail"},
		{"boss", []string{"mycologist", "host-logs", "a/b"}, ExitUsage, "invalid pod name"},
		{"boss", []string{"mycologist", "host-logs", "a", "b"}, ExitUsage, "at most one"},
	} {
		r := c.as(tc.who, nil, tc.args...)
		require.Equal(t, tc.code, r.code, "%s %v: %s", tc.who, tc.args, r.err)
		require.Contains(t, r.err, tc.msg)
		require.Empty(t, r.out)
	}
}

// CPU from the metrics API shows in millicores rounded up, as kubectl
// top shows it: an idle bridge's 0.000138 cores is 1m, not 0.000.
func TestHostsTableShowsMillicores(t *testing.T) {
	idle, busy, zero := 0.000138386, 0.25, 0.0
	mem := int64(7 << 20)
	l := hostList{HostList: reconcile.HostList{Hosts: []reconcile.Host{
		{Name: "spore-a", Spore: "a", State: "Running", CPUCores: &idle, MemoryBytes: &mem},
		{Name: "spore-b", Spore: "b", State: "Running", CPUCores: &busy},
		{Name: "spore-c", Spore: "c", State: "Running", CPUCores: &zero},
	}}}
	_, rows := l.Table(false)
	require.Equal(t, []string{"1m", "250m", "0m"}, []string{rows[0][3], rows[1][3], rows[2][3]})
}
