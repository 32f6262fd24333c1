package kube_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/kube"
	"github.com/sporectl/sporectl/kube/kubetest"
	"github.com/sporectl/sporectl/reconcile"
)

// In the cluster the bridge is dialled at the pod IP the kubelet reported.
func TestBridgeInClusterUsesPodIP(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	rt, err := kube.New(e.saCfg, kube.Options{Namespace: e.ns, InCluster: true})
	require.NoError(t, err)
	e.start(t, "direct")

	_, err = rt.Bridge(ctx, "direct")
	require.ErrorIs(t, err, kube.ErrNoPodIP, "an unscheduled pod has no address")

	require.NoError(t, e.kubelet.Schedule(ctx, "spore-direct"))
	require.NoError(t, e.kubelet.Run(ctx, "spore-direct", true))
	ep, err := rt.Bridge(ctx, "direct")
	require.NoError(t, err)
	pod, err := e.admin.CoreV1().Pods(e.ns).Get(ctx, "spore-direct", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "http://"+pod.Status.PodIP+":8080", ep.BaseURL)
	assert.True(t, ep.Token == creds("direct").BridgeToken, "token read from the spore's secret")
	require.NotNil(t, ep.Client)
}

// From outside the cluster the bridge is reached through the real API
// server's pod proxy: the request carries the API credentials to the
// server and the bridge token to the bridge.
func TestBridgeFromOutsideGoesThroughPodProxy(t *testing.T) {
	host := kubetest.NewPodHost(t)
	ip := host.IP
	e := newEnv(t)
	ctx := t.Context()
	want := creds("proxied").BridgeToken
	var gotAuth, gotToken string
	l, err := host.Listen(0)
	require.NoError(t, err)
	fakeBridge := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth, gotToken = r.Header.Get("Authorization"), r.Header.Get(bridge.TokenHeader)
		if r.URL.Path != "/v1/status" || gotToken != want {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"state": "idle", "last_seq": 7})
	}))
	fakeBridge.Listener = l
	fakeBridge.Start()
	t.Cleanup(fakeBridge.Close)
	port := l.Addr().(*net.TCPAddr).Port

	// Operators reach bridges with their own credentials (pods/proxy is not
	// in sporectl's Role), so this runtime uses the admin config.
	srv := kubetest.Shared(t)
	rt, err := kube.New(srv.Config, kube.Options{Namespace: e.ns, BridgePort: port})
	require.NoError(t, err)
	e.start(t, "proxied")
	e.kubelet.IP = ip
	require.NoError(t, e.kubelet.Schedule(ctx, "spore-proxied"))
	require.NoError(t, e.kubelet.Run(ctx, "spore-proxied", true))

	ep, err := rt.Bridge(ctx, "proxied")
	require.NoError(t, err)
	assert.Contains(t, ep.BaseURL, "/api/v1/namespaces/"+e.ns+"/pods/spore-proxied:"+strconv.Itoa(port)+"/proxy")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ep.BaseURL+"/v1/status", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+ep.Token)
	resp, err := ep.Client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var status struct {
		State   string `json:"state"`
		LastSeq int    `json:"last_seq"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&status))
	assert.Equal(t, "idle", status.State)
	assert.Equal(t, 7, status.LastSeq)
	assert.Empty(t, gotAuth, "the API server's credentials never reach the bridge")
	assert.True(t, gotToken == want, "the bridge token arrives in its own header")
}

// BridgeEndpoints reads every spore's token in one LIST where the caller
// may list Secrets, and falls back to one GET each under sporectl's own
// Role, which grants no list on Secrets.
func TestBridgeEndpointsInOneList(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	ids := []string{"b-1", "b-2", "b-3"}
	e.start(t, ids...)

	adminCfg, counter := kubetest.Counting(kubetest.Shared(t).Config)
	admin, err := kube.New(adminCfg, kube.Options{Namespace: e.ns})
	require.NoError(t, err)
	counter.Reset()
	eps, err := admin.BridgeEndpoints(ctx, reconcile.FleetObservation{}, append(ids, "missing"))
	require.NoError(t, err)
	assert.Equal(t, int64(1), counter.Requests(), "one LIST for every token")
	require.Len(t, eps, 3)
	for _, id := range ids {
		assert.True(t, eps[id].Token == creds(id).BridgeToken, "token of %s", id)
		assert.Contains(t, eps[id].BaseURL, "/pods/spore-"+id+":8080/proxy")
	}
	assert.Same(t, eps["b-1"].Client, eps["b-2"].Client, "one HTTP client for the fleet")
	threeBytes := counter.ResponseBytes()

	// One named: its Secret alone is listed, not the others'.
	counter.Reset()
	one, err := admin.BridgeEndpoints(ctx, reconcile.FleetObservation{}, []string{"b-2"})
	require.NoError(t, err)
	assert.Equal(t, int64(1), counter.Requests())
	require.Len(t, one, 1)
	assert.True(t, one["b-2"].Token == creds("b-2").BridgeToken)
	assert.Less(t, counter.ResponseBytes(), threeBytes/2, "the API server sent one Secret, not three (%d bytes of %d)", counter.ResponseBytes(), threeBytes)

	// More ids than one selector names: the fleet's Secrets, the named kept.
	many := []string{"b-3"}
	for i := range 64 {
		many = append(many, fmt.Sprintf("absent-%d", i))
	}
	counter.Reset()
	wide, err := admin.BridgeEndpoints(ctx, reconcile.FleetObservation{}, many)
	require.NoError(t, err)
	assert.Equal(t, int64(1), counter.Requests())
	require.Len(t, wide, 1)
	assert.True(t, wide["b-3"].Token == creds("b-3").BridgeToken)

	// sporectl's own Role: no list on Secrets, so one GET per spore.
	saCfg, saCounter := kubetest.Counting(e.saCfg)
	saRT, err := kube.New(saCfg, kube.Options{Namespace: e.ns})
	require.NoError(t, err)
	sa, err := saRT.BridgeEndpoints(ctx, reconcile.FleetObservation{}, ids)
	require.NoError(t, err)
	require.Len(t, sa, 3)
	assert.Equal(t, int64(1+len(ids)), saCounter.Requests(), "a forbidden LIST, then a GET each")
	assert.True(t, sa["b-2"].Token == creds("b-2").BridgeToken)
}

// In the cluster one observation lists the pods once: the bridges are
// dialled at the addresses Observe saw, not at those of a second LIST.
// With sporectl's own Role (no list on Secrets) a spore's token is one
// GET of its Secret, and its pod is not read again either.
func TestInClusterObservationListsPodsOnce(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	fakeBridge := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(bridge.Status{State: bridge.StateIdle, Healthy: true})
	}))
	fakeBridge.Listener = l
	fakeBridge.Start()
	t.Cleanup(fakeBridge.Close)
	port := l.Addr().(*net.TCPAddr).Port

	ids := []string{"in-1", "in-2"}
	e.kubelet.IP = "127.0.0.1"
	e.start(t, ids...)
	for _, id := range ids {
		require.NoError(t, e.kubelet.Schedule(ctx, kube.ObjectName(id)))
		require.NoError(t, e.kubelet.Run(ctx, kube.ObjectName(id), true))
	}

	for _, c := range []struct {
		name string
		cfg  *rest.Config
		want map[string]int
	}{
		{"may list Secrets", kubetest.Shared(t).Config, map[string]int{"pods": 1, "persistentvolumeclaims": 1, "secrets": 1}},
		// The LIST of Secrets forbidden: each read by name, no pod again.
		{"sporectl's Role", e.saCfg, map[string]int{"pods": 1, "persistentvolumeclaims": 1, "secrets": 1, "get secrets": 2}},
	} {
		cfg, lists := countingLists(c.cfg)
		rt, err := kube.New(cfg, kube.Options{Namespace: e.ns, InCluster: true, BridgePort: port})
		require.NoError(t, err)
		obs, _, err := reconcile.Observe(ctx, rt, ids)
		require.NoError(t, err, c.name)
		for _, id := range ids {
			assert.Equal(t, reconcile.BridgeUp, obs[id].Bridge, "%s: %s answered at its pod's IP", c.name, id)
		}
		assert.Equal(t, c.want, lists(), "%s: the LISTs of one observation", c.name)
	}
}

// countingLists counts cfg's reads by resource: a LIST as RESOURCE (a GET
// of /api/v1/namespaces/NS/RESOURCE), a GET of one object as "get
// RESOURCE".
func countingLists(cfg *rest.Config) (*rest.Config, func() map[string]int) {
	var mu sync.Mutex
	lists := map[string]int{}
	out := rest.CopyConfig(cfg)
	out.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			seg := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
			if r.Method == http.MethodGet && len(seg) >= 5 && seg[2] == "namespaces" {
				what := seg[4]
				if len(seg) > 5 {
					what = "get " + what
				}
				mu.Lock()
				lists[what]++
				mu.Unlock()
			}
			return next.RoundTrip(r)
		})
	})
	return out, func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(lists)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
