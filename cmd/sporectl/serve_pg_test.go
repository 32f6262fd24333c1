package main

// `sporectl serve` is stateless: two serve processes behind one PostgreSQL
// store, on the local runtime with the echo agent, answer as one — a
// message is recorded and delivered once whichever replica takes it, a
// retry is recognised across replicas, the rate limit is counted from the
// store, and SIGKILLing a replica in the middle of a burst loses nothing.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge/sporeenv"
	"github.com/sporectl/sporectl/mycelia"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/pgstore/pgtest"
	"github.com/sporectl/sporectl/state/statetest"
)

// servePGRateLimit is both replicas' --rate-limit: high enough for the
// colony mycologist's messages of the whole test, reached on purpose by
// the [swarm] mycologist.
const servePGRateLimit = 25

// servePG is two serve replicas of one store.
type servePG struct {
	r      *rig
	urls   [2]string // A, B
	serves [2]*exec.Cmd
	// logs are the stderr of every replica started, killed ones too.
	logs   []*bytes.Buffer
	tokens map[string]string
	http   *http.Client
}

// freeLoopback is a loopback address nobody listens on (for a moment).
func freeLoopback(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// start runs replica i (0: A, 1: B) of serve, the real binary.
func (s *servePG) start(i int) {
	s.r.t.Helper()
	addr := freeLoopback(s.r.t)
	s.urls[i] = "http://" + addr
	cmd := s.r.cmd("serve", "--addr", addr, "--rate-limit", strconv.Itoa(servePGRateLimit), "--address-check", "fallback", "-v")
	s.serves[i] = cmd
	s.logs = append(s.logs, serveStart(s.r.t, cmd, s.urls[i]))
}

// token is the API token the local runtime wrote into id's home.
func (s *servePG) token(id string) string {
	s.r.t.Helper()
	b, err := os.ReadFile(filepath.Join(s.r.home(id), filepath.FromSlash(mycelia.TokenFile)))
	require.NoError(s.r.t, err)
	tok := strings.TrimSpace(string(b))
	require.True(s.r.t, strings.HasPrefix(tok, "spt_"))
	return tok
}

// answer is one HTTP answer of serve.
type answer struct {
	status int
	header http.Header
	body   []byte
}

func (a answer) String() string { return fmt.Sprintf("%d %s", a.status, a.body) }

// tell POSTs /spores/{to}/prompt to replica url as sender, with the
// request id reqID. err is a transport error (the replica is gone).
func (s *servePG) tell(url, sender, to, text, reqID string) (answer, error) {
	body, _ := json.Marshal(mycelia.TellRequest{Text: text})
	req, err := http.NewRequest(http.MethodPost, url+"/spores/"+to+"/prompt", bytes.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Authorization", "Bearer "+s.tokens[sender])
	req.Header.Set(mycelia.HeaderSpore, sender)
	req.Header.Set(mycelia.HeaderRequestID, reqID)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.http.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// accepted is tell that must be answered 202; it returns the answer.
func (s *servePG) accepted(url, sender, to, text, reqID string) mycelia.SendResponse {
	s.r.t.Helper()
	a, err := s.tell(url, sender, to, text, reqID)
	require.NoError(s.r.t, err)
	require.Equal(s.r.t, http.StatusAccepted, a.status, "tell through %s: %s", url, a)
	var res mycelia.SendResponse
	require.NoError(s.r.t, json.Unmarshal(a.body, &res))
	return res
}

// messages counts the message events in id's stored log from sender
// whose text holds sub.
func (s *servePG) messages(id, sender, sub string) int {
	n := 0
	for _, ev := range s.r.storedEvents(id) {
		if ev.Kind == state.KindMessage && ev.From == "spore:"+sender && strings.Contains(ev.Text, sub) {
			n++
		}
	}
	return n
}

// sent counts the "sent" events in sender's stored log (what the rate
// limit counts).
func (s *servePG) sent(sender string) int {
	n := 0
	for _, ev := range s.r.storedEvents(sender) {
		if ev.Kind == state.KindLifecycle && ev.Action == "sent" {
			n++
		}
	}
	return n
}

// echoes counts the echo agent's answers in id's conversation to a tell
// from a mycologist of rank whose text starts with text.
func (s *servePG) echoes(id string, rank state.Rank, text string) int {
	s.r.t.Helper()
	return strings.Count(s.r.ok("chat", id), fmt.Sprintf("echo: [from the [%s] mycologist]\n        %s", rank, text))
}

// mycoSpores runs `mycologist spores -o json` (through argv[0]) as id
// against url.
func (s *servePG) mycoSpores(url, id string) []mycelia.SporeInfo {
	s.r.t.Helper()
	bin := filepath.Join(s.r.t.TempDir(), "mycologist")
	require.NoError(s.r.t, os.Symlink(binPath, bin))
	cmd := exec.Command(bin, "spores", "-o", "json")
	cmd.Env = serveEnv("HOME="+s.r.home(id), sporeenv.APIURL+"="+url, sporeenv.SporeID+"="+id)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(s.r.t, err, "mycologist spores through %s: %s", url, stderr.String())
	var l mycelia.SporeList
	require.NoError(s.r.t, json.Unmarshal(out, &l), "mycologist spores: %s", out)
	return l.Spores
}

// requireRateLimited: a documented 429, with a Retry-After within the
// minute the limit counts.
func requireRateLimited(t *testing.T, ans answer) {
	t.Helper()
	after, err := strconv.Atoi(ans.header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After %q", ans.header.Get("Retry-After"))
	require.True(t, after >= 1 && after <= 60, "Retry-After %d seconds, within the minute", after)
	var e mycelia.Error
	require.NoError(t, json.Unmarshal(ans.body, &e))
	require.Equal(t, mycelia.CodeRateLimited, e.Code)
}

// TestServePGTwoReplicasAreOne: two serve processes on different loopback
// ports behind one PostgreSQL store.
//
//	(a) a tell through A and one through B each reach the target's bridge
//	    as a prompt exactly once;
//	(b) a retry (same request id) sent to A and again to B is recorded
//	    and delivered once, and B says it was sent before;
//	(c) the per-spore rate limit is counted from the store: N allowed in
//	    total across A and B, the next one 429 with Retry-After from
//	    either;
//	(d) A is SIGKILLed in the middle of a concurrent burst of tells; the
//	    client retries what A did not answer through B with the same
//	    request ids; every message is acknowledged and delivered exactly
//	    once, none lost;
//
// and `mycologist spores` answers the same through both.
func TestServePGTwoReplicasAreOne(t *testing.T) {
	dbURL := pgtest.NewDatabase(t) // skips without PostgreSQL, fails in CI
	statetest.CheckPostgresOnCleanup(t, dbURL)
	stateHome := t.TempDir()
	r := &rig{t: t, store: dbURL, root: "/nonexistent", env: []string{"XDG_STATE_HOME=" + stateHome}}
	r.ok(append([]string{"init"}, echoInit()...)...)
	const myco, lead, target = "pg-myco", "pg-lead", "pg-target"
	r.ok("create", myco, "--rank", "colony", "--colony", "lab", "--wake")
	roots, err := filepath.Glob(filepath.Join(stateHome, "sporectl", "local", "*"))
	require.NoError(t, err)
	require.Len(t, roots, 1, "the local runtime's directory for this store")
	r.root = roots[0]
	t.Cleanup(func() { r.cleanup(myco) })
	r.ok("create", lead, "--rank", "swarm", "--colony", "lab", "--swarm", "red", "--role", "lead", "--wake")
	t.Cleanup(func() { r.cleanup(lead) })
	r.ok("create", target, "--colony", "lab", "--swarm", "red", "--role", "coder", "--wake")
	t.Cleanup(func() { r.cleanup(target) })
	for _, id := range []string{myco, lead, target} {
		r.ok("wake", id, "--wait", "20s")
		r.waitHealthy(id, 30*time.Second)
	}

	s := &servePG{r: r, tokens: map[string]string{}, http: &http.Client{Timeout: time.Minute}}
	for _, id := range []string{myco, lead} {
		s.tokens[id] = s.token(id)
	}
	s.start(0)
	s.start(1)
	require.NotEqual(t, s.urls[0], s.urls[1])
	a, b := s.urls[0], s.urls[1]

	// (a) One message through each replica, each once at the bridge.
	for i, url := range []string{a, b} {
		text := fmt.Sprintf("through replica %c: please run the unit tests", 'A'+i)
		res := s.accepted(url, myco, target, text, fmt.Sprintf("one-%d", i))
		require.False(t, res.Duplicate)
		require.Contains(t, []string{mycelia.Delivered, mycelia.Queued}, res.State, "the target is up: delivered now")
	}
	r.settle(target, 30*time.Second)
	for i := range 2 {
		text := fmt.Sprintf("through replica %c: please run the unit tests", 'A'+i)
		require.Equal(t, 1, s.messages(target, myco, text), "recorded once: %s", text)
		require.Equal(t, 1, s.echoes(target, state.RankColony, text), "a prompt once at the bridge: %s", text)
	}

	// (b) The same request to A, then again to B.
	retry := "retried across replicas: check the linter output"
	first := s.accepted(a, myco, target, retry, "retry-1")
	again := s.accepted(b, myco, target, retry, "retry-1")
	require.False(t, first.Duplicate)
	require.True(t, again.Duplicate, "B recognises A's request: %+v", again)
	require.Equal(t, first.ID, again.ID)
	r.settle(target, 30*time.Second)
	require.Equal(t, 1, s.messages(target, myco, retry))
	require.Equal(t, 1, s.echoes(target, state.RankColony, retry))

	// (c) The rate limit of the [swarm] mycologist, counted from the
	// store: more messages than it may send, from six clients at once,
	// alternating between A and B.
	require.Zero(t, s.sent(lead))
	const over = 5
	type result struct {
		i   int
		ans answer
	}
	statuses := make(chan result, servePGRateLimit+over)
	var wg sync.WaitGroup
	next := make(chan int, servePGRateLimit+over)
	for i := range servePGRateLimit + over {
		next <- i
	}
	close(next)
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				ans, err := s.tell(s.urls[i%2], lead, target, fmt.Sprintf("limit %02d: summarise the diff", i), fmt.Sprintf("limit-%d", i))
				if err != nil {
					ans = answer{status: -1, body: []byte(err.Error())}
				}
				statuses <- result{i, ans}
			}
		}()
	}
	wg.Wait()
	close(statuses)
	byStatus, allowed := map[int]int{}, -1
	for r := range statuses {
		byStatus[r.ans.status]++
		switch r.ans.status {
		case http.StatusTooManyRequests:
			requireRateLimited(t, r.ans)
		case http.StatusAccepted:
			allowed = r.i
		}
	}
	require.Equal(t, map[int]int{http.StatusAccepted: servePGRateLimit, http.StatusTooManyRequests: over}, byStatus,
		"N allowed in total across both replicas, the rest refused")
	for i, url := range []string{a, b} {
		ans, err := s.tell(url, lead, target, "over the limit: summarise the diff", fmt.Sprintf("over-%d", i))
		require.NoError(t, err)
		require.Equal(t, http.StatusTooManyRequests, ans.status, "one more through replica %c: %s", 'A'+i, ans)
		requireRateLimited(t, ans)
	}
	require.Equal(t, servePGRateLimit, s.sent(lead), "N allowed in total, whichever replica took them")
	require.Zero(t, s.messages(target, lead, "over the limit"), "a refused message is not written")
	// A repeat of an allowed message is not counted and still answered.
	rep := s.accepted(s.urls[1-allowed%2], lead, target, fmt.Sprintf("limit %02d: summarise the diff", allowed), fmt.Sprintf("limit-%d", allowed))
	require.True(t, rep.Duplicate, "%+v", rep)
	require.Equal(t, servePGRateLimit, s.sent(lead))
	require.Equal(t, servePGRateLimit, s.messages(target, lead, "summarise the diff"))

	// (d) A burst through A from four clients; A is SIGKILLed after its
	// fourth answer; what A did not answer is retried through B.
	const burst, clients = 16, 4
	burstText := func(i int) string { return fmt.Sprintf("burst %02d: rerun the integration suite", i) }
	type ack struct {
		i       int
		replica int
		res     mycelia.SendResponse
	}
	acks := make(chan ack, burst)
	failed := make(chan error, burst)
	var acked sync.WaitGroup
	acked.Add(clients)
	var mu sync.Mutex
	answeredByA := 0
	// killA is closed at A's fourth answer, killed once A is dead: a
	// client A answered after that waits, so every later request finds A
	// gone and at most clients-1 more were in flight at A.
	killA, killed := make(chan struct{}), make(chan struct{})
	var killOnce sync.Once
	work := make(chan int, burst)
	for i := range burst {
		work <- i
	}
	close(work)
	for range clients {
		go func() {
			defer acked.Done()
			for i := range work {
				reqID := fmt.Sprintf("burst-%d", i)
				replica := 0
				for attempt := 0; ; attempt++ {
					ans, err := s.tell(s.urls[replica], myco, target, burstText(i), reqID)
					if err == nil && ans.status == http.StatusAccepted {
						var res mycelia.SendResponse
						if err := json.Unmarshal(ans.body, &res); err != nil {
							failed <- fmt.Errorf("burst %d: %v: %s", i, err, ans)
							break
						}
						if replica == 0 {
							mu.Lock()
							answeredByA++
							n := answeredByA
							mu.Unlock()
							if n >= clients {
								killOnce.Do(func() { close(killA) })
								<-killed
							}
						}
						acks <- ack{i: i, replica: replica, res: res}
						break
					}
					if err == nil {
						// serve answered but refused: not what a retry is for.
						failed <- fmt.Errorf("burst %d through replica %c: %s", i, 'A'+replica, ans)
						break
					}
					if attempt >= 20 {
						failed <- fmt.Errorf("burst %d: gave up: %v", i, err)
						break
					}
					// A is gone: the client retries through B.
					replica = 1
				}
			}
		}()
	}
	<-killA
	require.NoError(t, s.serves[0].Process.Signal(syscall.SIGKILL))
	err = s.serves[0].Wait()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "serve A: %v", err)
	require.Equal(t, syscall.SIGKILL, ee.Sys().(syscall.WaitStatus).Signal())
	close(killed)
	acked.Wait()
	close(acks)
	close(failed)
	for err := range failed {
		t.Error(err)
	}
	require.False(t, t.Failed())
	got := map[int]ack{}
	throughB, dupes := 0, 0
	for k := range acks {
		require.NotContains(t, got, k.i)
		got[k.i] = k
		if k.replica == 1 {
			throughB++
			if k.res.Duplicate {
				dupes++
			}
		}
	}
	require.Len(t, got, burst, "every message of the burst was acknowledged")
	require.GreaterOrEqual(t, throughB, burst-(2*clients-1), "what was sent after A died went through B")
	t.Logf("burst: %d answered by A, %d by B (%d of them recorded by A before it died)", burst-throughB, throughB, dupes)

	// Reconcile finishes whatever A left in the outbox.
	r.settle(target, 60*time.Second)
	chat := r.ok("chat", target)
	for i := range burst {
		require.Equal(t, 1, s.messages(target, myco, burstText(i)), "burst %d recorded once", i)
		require.Equal(t, 1, strings.Count(chat, "echo: [from the [colony] mycologist]\n        "+burstText(i)), "burst %d reached the bridge once:\n%s", i, chat)
	}
	require.Equal(t, 2+1+burst, s.sent(myco), "the colony mycologist's messages, each counted once")

	// `mycologist spores` through B and through a restarted A: the same.
	s.start(0)
	type row struct{ ID, Rank, Colony, Desired, Effective string }
	rows := func(l []mycelia.SporeInfo) []row {
		var out []row
		for _, sp := range l {
			out = append(out, row{sp.ID, sp.Rank, sp.Colony, sp.Desired, sp.Effective})
		}
		return out
	}
	viaA, viaB := rows(s.mycoSpores(s.urls[0], myco)), rows(s.mycoSpores(s.urls[1], myco))
	require.Equal(t, viaA, viaB)
	require.ElementsMatch(t, []row{
		{lead, string(state.RankSwarm), "lab", "Running", "Healthy"},
		{target, string(state.RankSpore), "lab", "Running", "Healthy"},
	}, viaA)

	// No token in any output of either replica.
	for i := range s.serves {
		if s.serves[i].ProcessState == nil {
			_ = s.serves[i].Process.Signal(syscall.SIGTERM)
			_ = s.serves[i].Wait()
		}
	}
	for i, l := range s.logs {
		for id, tok := range s.tokens {
			require.NotContains(t, l.String(), tok, "the token of %s is in the log of serve process %d", id, i)
		}
	}
	require.Contains(t, s.logs[1].String(), "route=tell", "B's log names the route")
}
