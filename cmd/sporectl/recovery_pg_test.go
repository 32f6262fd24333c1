package main

// The recovery row for the store's server: a postgres:// store with the
// local runtime, and PostgreSQL stopped in the middle of a pass.

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/pgstore/pgtest"
)

// TestRecoveryStoreServerStopped — row "the store's server (Postgres
// stopped mid-pass)": a reconcile is cut off from PostgreSQL at two exact
// steps — after a bridge accepted its delivery, and after a bridge
// answered its ingest — by stopping the server (pg_ctl -m immediate, a
// crash) right then. The command fails with a clear store error (exit 6,
// docs/exit-codes.md) naming no password; commands meanwhile fail the same
// way and change nothing; after the server is back nothing of the cut-off
// pass is in the store (all or nothing), check is clean, and the next
// reconcile carries on: the delivered prompt is redelivered as a duplicate
// and recorded once, the lines are ingested once.
func TestRecoveryStoreServerStopped(t *testing.T) {
	pgtest.Shared(t) // skips without PostgreSQL, fails in CI
	// A server of this test's own: it is stopped under the test.
	ctx := context.Background()
	srv, err := pgtest.Start(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	_, dbURL, err := srv.CreateDatabase(ctx)
	require.NoError(t, err)

	stateHome := t.TempDir()
	r := &rig{t: t, store: dbURL, env: []string{"XDG_STATE_HOME=" + stateHome}}
	r.ok(append([]string{"init"}, echoInit()...)...)
	id := "rec-pg"
	// The runtime keeps homes for a PostgreSQL store beside the user's
	// state; it is found once the spore exists.
	r.root = "/nonexistent"
	down := false // the server is stopped (only the test goroutine writes it)
	r.ok("create", id, "--wake")
	roots, err := filepath.Glob(filepath.Join(stateHome, "sporectl", "local", "*"))
	require.NoError(t, err)
	require.Len(t, roots, 1, "the local runtime's directory for this store")
	r.root = roots[0]
	r.t.Cleanup(func() { r.cleanup(id) })
	r.t.Cleanup(func() {
		// First of the cleanups: the spore is deleted through the store.
		if down {
			_ = srv.Start(ctx)
		}
	})
	r.ok("wake", id, "--wait", "20s")
	r.waitHealthy(id, 30*time.Second)
	files := map[string]string{"work/notes.txt": "written before the outage\n"}
	for rel, c := range files {
		r.writeHome(id, rel, c)
	}
	first, _ := r.prompt(id, "before the outage")
	r.settle(id, 30*time.Second)

	// A prompt waits in the outbox (the proxy refuses its first delivery).
	p := r.proxyBridge(id)
	p.set(func(p *bridgeProxy) { p.refusePrompts = true })
	text := "delivered by the pass whose store goes away"
	pid, st := r.prompt(id, text)
	require.Equal(t, "waiting", st)
	p.set(func(p *bridgeProxy) { p.refusePrompts = false })

	outage := func(step string) {
		t.Helper()
		before := r.storedEvents(id)
		spBefore, pendingBefore := r.record(id)
		var once sync.Once
		stopped := make(chan error, 1)
		stop := func() { // in the proxy's goroutine
			once.Do(func() { stopped <- srv.Stop("immediate") })
		}
		p.set(func(p *bridgeProxy) {
			p.afterAccept, p.afterEvents = nil, nil
			if step == "deliver" {
				p.afterAccept = func(bridge.PromptAccepted) { stop() }
			} else {
				p.afterEvents = stop
			}
		})
		res := r.run("reconcile")
		p.set(func(p *bridgeProxy) { p.afterAccept, p.afterEvents = nil, nil })
		select {
		case err := <-stopped:
			down = true
			require.NoError(t, err, "stop PostgreSQL")
		default:
			t.Fatalf("the pass never reached %s: %s", step, res)
		}
		require.Equal(t, 6, res.code, "reconcile cut off from its store after %s: %s", step, res)
		requireStoreError(t, res, srv.Password)

		// While it is down every command says so, and nothing changes.
		for _, args := range [][]string{{"status", id}, {"prompt", id, "lost: the store is down"}, {"reconcile"}} {
			res := r.run(args...)
			require.Equal(t, 6, res.code, "sporectl %v with the store down: %s", args, res)
			requireStoreError(t, res, srv.Password)
		}
		require.NoError(t, srv.Start(ctx))
		down = false

		// All or nothing: the cut-off pass left nothing behind.
		after := r.storedEvents(id)
		require.Len(t, after, len(before), "the pass cut off after %s committed part of its work", step)
		requirePrefix(t, before, after, "after the outage")
		spAfter, pendingAfter := r.record(id)
		require.Equal(t, spBefore.BridgeSeq, spAfter.BridgeSeq)
		require.Equal(t, len(pendingBefore), len(pendingAfter))
		require.Contains(t, r.ok("check"), "ok:")
	}

	outage("deliver")
	_, pending := r.record(id)
	require.Len(t, pending, 1, "the prompt is still in the outbox")
	require.Equal(t, pid, pending[0].ID)
	r.waitIdle(id, 10*time.Second) // the bridge ran it: lines to ingest
	sp, _ := r.record(id)
	require.Less(t, sp.BridgeSeq, r.bridgeStatus(id).LastSeq)
	outage("ingest")

	p.detach(r, id)
	r.settle(id, 30*time.Second)
	var redelivered bool
	for _, e := range r.events(id) {
		if e.Kind == state.KindLifecycle && e.Action == "delivered" && strings.HasPrefix(e.Text, "prompt "+pid) {
			redelivered = strings.Contains(e.Text, "the bridge had it already")
		}
	}
	require.True(t, redelivered, "the next pass redelivered the prompt and the bridge said duplicate")
	r.requireIntact(id, expect{echo: true, files: files, prompts: []sent{
		{id: first, text: "before the outage", acked: true}, {id: pid, text: text, acked: true}}})
}

// requireStoreError: a store error a person can act on, without the
// password.
func requireStoreError(t *testing.T, res cmdResult, password string) {
	t.Helper()
	require.NotContains(t, res.stderr+res.stdout, password, "the password leaked")
	var msg string
	for _, l := range strings.Split(res.stderr, "\n") {
		if strings.HasPrefix(l, "error: ") {
			msg = l
		}
	}
	require.Contains(t, msg, "postgres", "the error names the store and what is wrong with it: %s", res.stderr)
}
