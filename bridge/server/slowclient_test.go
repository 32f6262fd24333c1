package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/bridge/agent"
	"github.com/sporectl/sporectl/bridge/sporeenv"
)

// startHelperBridge runs the echo bridge as its own process (this test
// binary re-executed) with extra environment, and waits until it answers.
func startHelperBridge(t *testing.T, home, addr string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1", helperHomeEnv+"="+home, helperAddrEnv+"="+addr,
		helperClaudeEnv+"=", sporeenv.BridgeToken+"="+testToken)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = testWriter{t}
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	c, err := bridge.NewClient("http://"+addr, testToken, nil)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return c.Health(context.Background()) == nil }, 20*time.Second, 20*time.Millisecond,
		"the helper bridge never answered")
	return cmd
}

// freshClient talks to the bridge on a new connection for every call, as a
// prober or a sporectl command that just started does.
func freshClient(t *testing.T, addr string, timeout time.Duration) *bridge.Client {
	t.Helper()
	c, err := bridge.NewClient("http://"+addr, testToken, &http.Client{Transport: &http.Transport{DisableKeepAlives: true}})
	require.NoError(t, err)
	return c.WithTimeout(timeout)
}

// openFiles counts the open file descriptors of process pid.
func openFiles(t *testing.T, pid int) int {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	require.NoError(t, err)
	return len(entries)
}

// TestSlowClientsCannotStarveTheBridge is the attack of issue 9 at a small
// scale: a bridge limited to 512 open files (so that exhausting them takes
// 500 connections, not 21,000) is flooded from loopback with connections
// that never finish their request, or that declare a body and never send
// it, carrying no token. /healthz, an authenticated prompt and status must
// still answer within a bound, the bridge must hold no more connections
// than its cap, and the requests that declared a body must be answered
// (401, or /healthz's 200) without the body.
//
// The bridge runs with its default settings; the test bounds its own
// number of connections and ends them all itself.
func TestSlowClientsCannotStarveTheBridge(t *testing.T) {
	const slow, more = 600, 300
	var lim syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim))
	if lim.Cur < slow+more+200 {
		t.Skipf("this test holds %d connections; the open-file limit is %d", slow+more, lim.Cur)
	}
	addr := freeAddr(t)
	cmd := startHelperBridge(t, t.TempDir(), addr, helperNofileEnv+"=512")
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	dial := func() net.Conn {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			return nil // the backlog is full: the flood succeeded in its way; the probes below decide
		}
		conns = append(conns, c)
		return c
	}
	// Half send nothing at all, half stop in the middle of their headers.
	for i := range slow {
		c := dial()
		if c != nil && i%2 == 1 {
			_, _ = io.WriteString(c, "POST /v1/prompts HTTP/1.1\r\nHost: bridge\r\nContent-Length: 100\r\n")
		}
	}
	// Requests that declare a body and never send it: without a token on
	// /v1, and on /healthz (no token needed, no body read).
	type declared struct {
		c          net.Conn
		wantStatus int
	}
	var withBody []declared
	for i := range 20 {
		c := dial()
		if c == nil {
			continue
		}
		req, want := "POST /v1/prompts HTTP/1.1\r\nHost: bridge\r\nAuthorization: Bearer wrong\r\nContent-Length: 4096\r\n\r\n", 401
		if i%2 == 1 {
			req, want = "GET /healthz HTTP/1.1\r\nHost: bridge\r\nContent-Length: 4096\r\n\r\n", 200
		}
		_, err := io.WriteString(c, req)
		require.NoError(t, err)
		withBody = append(withBody, declared{c, want})
	}

	// The flood goes on while the probes run: a new silent connection
	// every millisecond, up to more.
	stopFlood := make(chan struct{})
	flooded := make(chan []net.Conn)
	go func() {
		held := conns[:len(conns):len(conns)]
		defer func() { flooded <- held }()
		for range more {
			select {
			case <-stopFlood:
				return
			case <-time.After(time.Millisecond):
			}
			if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
				held = append(held, c)
			}
		}
		<-stopFlood
	}()

	// What a prober and a sporectl command need still works, promptly.
	probe := freshClient(t, addr, 3*time.Second)
	ctx := context.Background()
	began := time.Now()
	for i := range 5 {
		require.NoError(t, probe.Health(ctx), "/healthz under a flood of slow connections")
		_, err := probe.Prompt(ctx, bridge.PromptRequest{ID: fmt.Sprint("under-flood-", i), From: "user:test", Text: "still here?"})
		require.NoError(t, err, "an authenticated prompt under a flood of slow connections")
		st, err := probe.Status(ctx)
		require.NoError(t, err)
		require.True(t, st.Healthy)
	}
	require.Less(t, time.Since(began), 10*time.Second)
	n := openFiles(t, cmd.Process.Pid)
	close(stopFlood)
	conns = <-flooded
	require.LessOrEqual(t, n, DefaultMaxConns+64, "the bridge holds %d files under a flood", n)

	for i, d := range withBody {
		require.NoError(t, d.c.SetReadDeadline(time.Now().Add(3*time.Second)))
		resp, err := http.ReadResponse(bufio.NewReader(d.c), nil)
		require.NoError(t, err, "request %d that declared a body was not answered without it", i)
		_ = resp.Body.Close()
		require.Equal(t, d.wantStatus, resp.StatusCode, "request %d", i)
		require.True(t, resp.Close, "request %d: the connection of an unread body is closed", i)
	}

}

// runBridge serves a bridge with the echo agent through Run, on ln (or
// a new loopback listener), until the test ends.
func runBridge(t *testing.T, ln net.Listener, tweak func(*Config)) (addr string, s *Server) {
	t.Helper()
	if ln == nil {
		var err error
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
	}
	cfg := Config{Home: t.TempDir(), Token: testToken, Agent: agent.Echo{}, Logger: testLogger(t)}
	if tweak != nil {
		tweak(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s, err := New(ctx, cfg)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
		require.NoError(t, s.Close())
	})
	return ln.Addr().String(), s
}

// countingListener counts the bytes the server reads from each connection.
type countingListener struct {
	net.Listener
	conns chan *countingConn
}

type countingConn struct {
	net.Conn
	read chan int
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.read <- n
	}
	return n, err
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	cc := &countingConn{Conn: c, read: make(chan int, 1024)}
	l.conns <- cc
	return cc, nil
}

// TestUnauthenticatedBodyIsNeverRead: a request without the token that
// declares a body is answered 401 on its headers alone, its connection is
// closed, and not one byte after the headers is read from it.
func TestUnauthenticatedBodyIsNeverRead(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ln := &countingListener{Listener: inner, conns: make(chan *countingConn, 16)}
	addr, _ := runBridge(t, ln, nil)
	for _, tc := range []struct{ name, headers string }{
		{"no token", ""},
		{"wrong bearer", "Authorization: Bearer wrong\r\n"},
		{"wrong proxy header", bridge.TokenHeader + ": wrong\r\n"},
		{"chunked", "Transfer-Encoding: chunked\r\n"},
		{"expects 100-continue", "Expect: 100-continue\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", addr)
			require.NoError(t, err)
			defer c.Close()
			head := "POST /v1/prompts HTTP/1.1\r\nHost: bridge\r\n" + tc.headers
			if !strings.Contains(tc.headers, "chunked") {
				head += "Content-Length: 2000\r\n"
			}
			head += "\r\n"
			_, err = io.WriteString(c, head)
			require.NoError(t, err)
			sc := <-ln.conns

			require.NoError(t, c.SetReadDeadline(time.Now().Add(3*time.Second)))
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			require.NoError(t, err, "no answer before the body was sent")
			body, _ := io.ReadAll(resp.Body)
			require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s", body)
			require.Contains(t, string(body), "missing or wrong bearer token")
			require.True(t, resp.Close, "the connection is closed rather than its body read")
			require.NotEqual(t, "100 Continue", resp.Status)

			// Whatever is sent now is never read: the server closes.
			_, _ = io.WriteString(c, strings.Repeat("x", 2000))
			_, err = br.ReadByte()
			require.Error(t, err, "the connection stays open")
			read := 0
			for {
				select {
				case n := <-sc.read:
					read += n
					continue
				case <-time.After(100 * time.Millisecond):
				}
				break
			}
			require.Equal(t, len(head), read, "the server read past the headers")
		})
	}
}

// TestBodyReadIsBounded: an authenticated request whose body stalls is
// answered 408 once BodyTimeout has passed, and nothing is queued.
func TestBodyReadIsBounded(t *testing.T) {
	addr, s := runBridge(t, nil, func(c *Config) { c.BodyTimeout = 300 * time.Millisecond })
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "POST /v1/prompts HTTP/1.1\r\nHost: bridge\r\nAuthorization: Bearer "+testToken+
		"\r\nContent-Length: 2000\r\n\r\n{\"id\":\"stalled\",")
	require.NoError(t, err)
	began := time.Now()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusRequestTimeout, resp.StatusCode, "%s", body)
	require.Less(t, time.Since(began), 3*time.Second)
	require.Zero(t, s.Status().Queue)

	// A body that arrives in time is fine, on a kept-alive connection.
	hc := &http.Client{}
	for i := range 3 {
		cl, err := bridge.NewClient("http://"+addr, testToken, hc)
		require.NoError(t, err)
		_, err = cl.Prompt(context.Background(), bridge.PromptRequest{ID: fmt.Sprint("ok-", i), From: "user:test", Text: "hi"})
		require.NoError(t, err)
		time.Sleep(400 * time.Millisecond) // longer than BodyTimeout, between requests
	}
}

// TestHeaderReadIsBounded: a connection that never finishes its headers is
// closed after HeaderTimeout.
func TestHeaderReadIsBounded(t *testing.T) {
	addr, _ := runBridge(t, nil, func(c *Config) { c.HeaderTimeout = 300 * time.Millisecond })
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: bri")
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
	began := time.Now()
	_, err = io.ReadAll(c)
	require.NoError(t, err, "the server closes the connection (EOF), not the test's deadline")
	require.Less(t, time.Since(began), 3*time.Second)
}

// TestConnectionCap: with MaxConns connections open, a new one takes the
// place of the least recently useful one that is not being served;
// authenticated requests being served (long-polls) are never cut.
func TestConnectionCap(t *testing.T) {
	const maxConns = 8
	addr, s := runBridge(t, nil, func(c *Config) { c.MaxConns = maxConns })
	ctx := context.Background()
	// Wait for the bridge's first line, so the long-polls below hold.
	c0 := freshClient(t, addr, 5*time.Second)
	require.Eventually(t, func() bool { return s.Status().LastSeq > 0 }, 5*time.Second, 10*time.Millisecond)
	last := s.Status().LastSeq

	// maxConns-2 authenticated long-polls, each on its own connection.
	polls := make(chan error, maxConns)
	for range maxConns - 2 {
		go func() {
			cl := freshClient(t, addr, 10*time.Second)
			_, err := cl.Events(ctx, last, 10, 2*time.Second)
			polls <- err
		}()
	}
	require.Eventually(t, func() bool { return s.conns.Load() != nil && s.conns.Load().busy() == maxConns-2 }, 5*time.Second, 10*time.Millisecond)

	var idle []net.Conn
	t.Cleanup(func() {
		for _, c := range idle {
			c.Close()
		}
	})
	for range 50 {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		idle = append(idle, c)
	}
	require.NoError(t, c0.Health(ctx))
	_, err := c0.Status(ctx)
	require.NoError(t, err)
	require.LessOrEqual(t, s.conns.Load().open(), maxConns)
	for range maxConns - 2 {
		require.NoError(t, <-polls, "a long-poll was cut to make room")
	}
	// Most idle connections were closed by the bridge to make room.
	closed := 0
	for _, c := range idle {
		_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err != nil && !isTimeout(err) {
			closed++
		}
	}
	require.GreaterOrEqual(t, closed, 50-maxConns)
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
