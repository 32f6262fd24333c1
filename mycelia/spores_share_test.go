package mycelia

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
)

// reachOf is exactly what each mycologist of the colony (harness.colony)
// reaches.
var reachOf = map[string][]string{
	"lab-lead": {"lab-a", "lab-b"},
	"lab-myco": {"lab-a", "lab-b", "lab-c", "lab-lead"},
	"arch":     {"far-myco", "far-x", "lab-a", "lab-b", "lab-c", "lab-lead", "lab-myco"},
}

// gatedPasses counts the server's passes and holds each one, once it has
// run, until release is closed: the lists asked meanwhile overlap it.
type gatedPasses struct {
	n       atomic.Int64
	entered chan struct{}
	release chan struct{}
}

func gatePasses(h *harness) *gatedPasses {
	g := &gatedPasses{entered: make(chan struct{}, 16), release: make(chan struct{})}
	h.srv.Pass.Finished = func(reconcile.Options, *reconcile.Outcome, time.Duration, error) {
		g.n.Add(1)
		g.entered <- struct{}{}
		<-g.release
	}
	return g
}

// listAnswer is one list as a caller got it, asked from a goroutine of
// its own (no require there).
type listAnswer struct {
	status int
	ids    []string
	err    error
}

func (h *harness) list(ctx context.Context, caller string) listAnswer {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.ts.URL+"/api/spores", nil)
	if err != nil {
		return listAnswer{err: err}
	}
	req.Header.Set("Authorization", "Bearer "+h.tokens[caller])
	req.Header.Set(HeaderSpore, caller)
	resp, err := h.ts.Client().Do(req)
	if err != nil {
		return listAnswer{err: err}
	}
	defer resp.Body.Close()
	a := listAnswer{status: resp.StatusCode}
	if resp.StatusCode == http.StatusOK {
		var l SporeList
		if a.err = json.NewDecoder(resp.Body).Decode(&l); a.err == nil {
			for _, s := range l.Spores {
				a.ids = append(a.ids, s.ID)
			}
			slices.Sort(a.ids)
		}
	}
	return a
}

// listAll asks the list as every caller at once, while the first one's
// pass is held, and returns their answers once g is released.
func (h *harness) listAll(t *testing.T, g *gatedPasses, callers []string) []listAnswer {
	t.Helper()
	answers := make([]listAnswer, len(callers))
	var wg sync.WaitGroup
	for i, caller := range callers {
		wg.Add(1)
		go func() { defer wg.Done(); answers[i] = h.list(context.Background(), caller) }()
		if i == 0 {
			<-g.entered // the first list's pass is running
		}
	}
	require.Eventually(t, func() bool { return h.srv.fleet.Waiting() == len(callers) }, 10*time.Second, time.Millisecond,
		"the later lists wait for the running pass")
	close(g.release)
	wg.Wait()
	return answers
}

// TestSporesListSharesOnePass: lists asked while a pass runs share it,
// callers of every reach, and each gets exactly its own reach from it;
// lists within SporesShare of it read nothing of the fleet.
func TestSporesListSharesOnePass(t *testing.T) {
	h := newHarness(t).colony()
	h.srv.SporesShare = time.Hour
	g := gatePasses(h)
	callers := []string{"arch", "lab-lead", "lab-myco", "lab-lead", "arch", "lab-myco"}
	for i, a := range h.listAll(t, g, callers) {
		require.NoError(t, a.err, callers[i])
		require.Equal(t, http.StatusOK, a.status, callers[i])
		require.Equal(t, reachOf[callers[i]], a.ids, "%s sees its reach and nothing else", callers[i])
	}
	require.Equal(t, int64(1), g.n.Load(), "six lists of three reaches, one pass")

	// Within SporesShare: the same read, and no read of the fleet at all
	// (the caller's record and token only).
	c := &statetest.Reads{Store: h.st}
	h.srv.Store = c
	for _, caller := range []string{"lab-myco", "lab-lead", "arch"} {
		a := h.list(context.Background(), caller)
		require.NoError(t, a.err)
		require.Equal(t, reachOf[caller], a.ids, caller)
	}
	require.Equal(t, int64(1), g.n.Load(), "within SporesShare: the last pass")
	require.Equal(t, map[string]int{"Spore": 3, "TokenHash": 3}, c.TakeCalls())

	// Reach is the caller's own record of now: a [colony] mycologist
	// moved to another colony sees that colony in the same shared read.
	require.NoError(t, h.st.Update(context.Background(), func(tx state.Tx) error {
		sp, err := tx.Spore(context.Background(), "lab-myco")
		if err != nil {
			return err
		}
		sp.Colony = "far"
		sp.Generation++
		return tx.PutWish(context.Background(), sp.Wish)
	}))
	a := h.list(context.Background(), "lab-myco")
	require.NoError(t, a.err)
	require.Equal(t, []string{"far-x"}, a.ids, "far-myco is a [colony] mycologist too: out of reach")
	require.Equal(t, int64(1), g.n.Load())
}

// TestSporesListStalenessBounded: a list is at most SporesShare old; with
// SporesShare negative, lists that overlap no pass each run one.
func TestSporesListStalenessBounded(t *testing.T) {
	h := newHarness(t).colony()
	var passes atomic.Int64
	h.srv.Pass.Finished = func(reconcile.Options, *reconcile.Outcome, time.Duration, error) { passes.Add(1) }
	activity := func() string {
		t.Helper()
		r := h.do("lab-myco", "GET", "/api/spores", nil)
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		var l SporeList
		r.decode(t, &l)
		for _, s := range l.Spores {
			if s.ID == "lab-a" {
				return s.Activity
			}
		}
		t.Fatal("lab-a not listed")
		return ""
	}
	const share = 200 * time.Millisecond
	h.srv.SporesShare = share
	// start is before the first read ends: a list within share of start
	// is within share of that read.
	start := time.Now()
	require.Equal(t, "idle", activity())
	h.rt.BridgeOf("lab-a").SetState(bridge.StateWorking)
	got := activity()
	if time.Since(start) < share { // else too loaded a machine to tell
		require.Equal(t, "idle", got, "inside SporesShare: the shared read")
		require.Equal(t, int64(1), passes.Load())
	}
	time.Sleep(share)
	require.Equal(t, "working", activity(), "older than SporesShare: read again")

	h.srv.SporesShare = -1
	n := passes.Load()
	activity()
	activity()
	require.Equal(t, n+2, passes.Load(), "SporesShare < 0: every list that overlaps no pass runs one")
	h.srv.SporesShare = 0
	require.Equal(t, DefaultSporesShare, h.srv.sporesShare())
}

// failingViews fails every read while fail is set.
type failingViews struct {
	state.Store
	fail atomic.Bool
}

var errStoreDown = errors.New("store down")

func (f *failingViews) View(ctx context.Context, fn func(state.Tx) error) error {
	if f.fail.Load() {
		return errStoreDown
	}
	return f.Store.View(ctx, fn)
}

// TestSporesListErrorToEveryWaiter: a pass that fails fails every list
// that waited for it, and is not kept: the next list reads again.
func TestSporesListErrorToEveryWaiter(t *testing.T) {
	h := newHarness(t).colony()
	h.srv.SporesShare = time.Hour
	fv := &failingViews{Store: h.st}
	h.srv.Pass.Store = fv // the pass's reads only: callers still authenticate
	fv.fail.Store(true)
	g := gatePasses(h)
	callers := []string{"arch", "lab-myco", "lab-lead"}
	for i, a := range h.listAll(t, g, callers) {
		require.NoError(t, a.err, callers[i])
		require.Equal(t, http.StatusInternalServerError, a.status, callers[i])
	}
	require.Equal(t, int64(1), g.n.Load(), "three lists, one failed pass")
	require.Contains(t, h.logs.String(), errStoreDown.Error())

	fv.fail.Store(false)
	a := h.list(context.Background(), "lab-myco")
	require.NoError(t, a.err)
	require.Equal(t, http.StatusOK, a.status, "the failure was not kept")
	require.Equal(t, reachOf["lab-myco"], a.ids)
	require.Equal(t, int64(2), g.n.Load())
}
