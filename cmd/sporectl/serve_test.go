package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge/sporeenv"
	"github.com/sporectl/sporectl/cmd/cli"
	"github.com/sporectl/sporectl/mycelia"
	"github.com/sporectl/sporectl/state/statetest"
)

// A serve that dies at a failpoint is this test binary run again as
// sporectl: with serveChildEnv set, it runs the command line it was
// given, SIGKILLing itself at the failpoint named by serveFailpointEnv.
// (It must not reach TestMain, which builds the binary and starts
// PostgreSQL; bridges it starts run the real binary.)
const (
	serveChildEnv     = "SPORECTL_TEST_SERVE_CHILD"
	serveFailpointEnv = "SPORECTL_TEST_SERVE_FAILPOINT"
	serveBinEnv       = "SPORECTL_TEST_SERVE_BIN"
)

func init() {
	if os.Getenv(serveChildEnv) == "" {
		return
	}
	want := os.Getenv(serveFailpointEnv)
	mycelia.Failpoint = func(name string) {
		if name == want {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	f := cli.NewFactory(cli.SystemIO())
	f.Executable = os.Getenv(serveBinEnv)
	code := cli.RunWith(ctx, f, os.Args[1:])
	stop()
	os.Exit(code)
}

// serveEvents is the store's log of id.
func serveEvents(t *testing.T, store, id string) []struct {
	Kind, From, Text, Action string
} {
	t.Helper()
	var doc struct {
		Events []struct {
			Kind, From, Text, Action string
		} `json:"events"`
	}
	require.NoError(t, json.Unmarshal(runOK(t, store, "events", id, "-o", "json"), &doc))
	return doc.Events
}

func serveMessages(t *testing.T, store, id, from string) int {
	n := 0
	for _, ev := range serveEvents(t, store, id) {
		if ev.Kind == "message" && ev.From == from {
			n++
		}
	}
	return n
}

// serveStart starts a serve process and waits for its /healthz.
func serveStart(t *testing.T, cmd *exec.Cmd, url string) *bytes.Buffer {
	t.Helper()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	require.Eventually(t, func() bool {
		resp, err := http.Get(url + "/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 15*time.Second, 20*time.Millisecond, "serve did not come up")
	return &stderr
}

// serveEnv is the environment without any SPORECTL_ variable of the
// test's own.
func serveEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SPORECTL_") && !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// TestServeAskWakesTheMycologistOnceAcrossASIGKILL: a spore, with the
// token the local runtime wrote to its home, runs `mycologist ask`
// (through argv[0]) against a real serve; serve is SIGKILLed after
// committing the message and before answering, and restarted; the
// client retries with the same request id; the sleeping colony
// mycologist is woken and the message lands in its conversation exactly
// once.
func TestServeAskWakesTheMycologistOnceAcrossASIGKILL(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	statetest.CheckDirOnCleanup(t, store)
	runOK(t, store, "init", "--agent", "echo", "--backoff-initial", "1s")
	runOK(t, store, "create", "myco", "--rank", "colony", "--colony", "lab")
	runOK(t, store, "create", "asker", "--colony", "lab", "--wake")
	t.Cleanup(func() {
		_ = sporectl(store, "stop", "asker").Run()
		_ = sporectl(store, "stop", "myco").Run()
	})
	runOK(t, store, "wake", "asker", "--wait", "15s")
	home := filepath.Join(store, "homes", "asker")
	tokenBytes, err := os.ReadFile(filepath.Join(home, ".sporectl-bridge", "api-token"))
	require.NoError(t, err)
	token := strings.TrimSpace(string(tokenBytes))
	require.True(t, strings.HasPrefix(token, "spt_"))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	url := "http://" + addr

	// 1. A serve that dies between the commit and the answer.
	first := exec.Command(os.Args[0], "serve", "--addr", addr, "-v")
	first.Env = serveEnv("SPORECTL_STORE="+store, serveChildEnv+"=1", serveFailpointEnv+"=committed", serveBinEnv+"="+binPath)
	firstLog := serveStart(t, first, url)

	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	require.NoError(t, os.Symlink(binPath, filepath.Join(bin, "mycologist")))
	ask := exec.Command(filepath.Join(bin, "mycologist"), "ask", "my build is red: please look", "--retry-for", "60s")
	// What a spore has: the API's address, its id, and its home holding
	// the token (no SPORECTL_API_TOKEN).
	ask.Env = serveEnv("HOME="+home, sporeenv.APIURL+"="+url, sporeenv.SporeID+"=asker")
	var askOut, askErr bytes.Buffer
	ask.Stdout, ask.Stderr = &askOut, &askErr
	require.NoError(t, ask.Start())
	t.Cleanup(func() {
		if ask.ProcessState == nil {
			_ = ask.Process.Kill()
			_ = ask.Wait()
		}
	})

	err = first.Wait()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee), "serve exited %v: %s", err, firstLog)
	require.Equal(t, syscall.SIGKILL, ee.Sys().(syscall.WaitStatus).Signal(), "serve died at the failpoint")
	require.Equal(t, 1, serveMessages(t, store, "myco", "spore:asker"), "committed before the answer")
	require.Nil(t, ask.ProcessState, "the client got no answer and is retrying")

	// 2. serve again (the real binary): the retry is recognised.
	second := sporectl(store, "serve", "--addr", addr, "-v")
	second.Env = serveEnv("SPORECTL_STORE=" + store)
	secondLog := serveStart(t, second, url)
	done := make(chan error, 1)
	go func() { done <- ask.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "mycologist ask: %s", askErr.String())
	case <-time.After(90 * time.Second):
		t.Fatalf("mycologist ask did not finish: %s", askErr.String())
	}
	require.Regexp(t, `^message/m-[0-9a-f]{24} .*spore/myco.*\(sent before; not sent again\)\n$`, askOut.String())

	// The woken mycologist's bridge takes it (serve follows it up).
	echo := "echo: [from spore asker]\n        my build is red: please look"
	require.Eventually(t, func() bool {
		return strings.Count(string(runOK(t, store, "chat", "myco")), echo) == 1
	}, 60*time.Second, 200*time.Millisecond, "the message never reached the mycologist: %s", secondLog)
	runOK(t, store, "reconcile")
	chat := string(runOK(t, store, "chat", "myco"))
	require.Equal(t, 1, strings.Count(chat, echo), "answered more than once:\n%s", chat)
	require.Equal(t, 1, strings.Count(chat, "> [spore:asker] [from spore asker]\n                        my build is red"), "in the conversation more than once:\n%s", chat)
	require.Equal(t, 1, serveMessages(t, store, "myco", "spore:asker"))
	require.Contains(t, chat, "`mycologist spore asker --turns 5`", "the summons says how to read the asker")

	// Nothing printed or logged holds the token.
	_ = second.Process.Signal(syscall.SIGTERM)
	_ = second.Wait()
	for name, s := range map[string]string{
		"first serve": firstLog.String(), "second serve": secondLog.String(),
		"client": askOut.String() + askErr.String(), "chat": chat,
		"events": string(runOK(t, store, "events", "myco", "-o", "json")) + string(runOK(t, store, "events", "asker", "-o", "json")),
	} {
		require.NotContains(t, s, token, "the token is in the %s output", name)
	}
	require.Contains(t, secondLog.String(), "route=summons")
}
