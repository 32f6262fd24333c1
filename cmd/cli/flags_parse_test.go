package cli

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
)

// parse runs a command built with runF on args and returns the options
// runF was handed (nil when the command refused the arguments first),
// with the command's error. Nothing reaches a store or a runtime.
func parse[O any](t *testing.T, build func(*Factory, func(context.Context, *O) error) *cobra.Command, args ...string) (*O, error) {
	t.Helper()
	f := NewFactory(IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
	var got *O
	cmd := build(f, func(_ context.Context, o *O) error { got = o; return nil })
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(t.Context())
	return got, err
}

// What each command's arguments and flags parse into, checked before
// anything runs, and that a refused value stops the command before it
// would run (runF is not called).
func TestFlagsParseIntoOptions(t *testing.T) {
	t.Run("create", func(t *testing.T) {
		o, err := parse(t, newCmdCreate, "w-1", "--colony", "lab", "--rank", "swarm", "--swarm", "s1", "--role", "lead", "--wake", "--cpu", "2", "--memory", "3Gi")
		require.NoError(t, err)
		assert.Equal(t, []string{"w-1"}, o.IDs)
		assert.Equal(t, "lab", o.Colony)
		assert.Equal(t, "swarm", o.Rank)
		assert.Equal(t, "s1", o.Swarm)
		assert.Equal(t, "lead", o.Role)
		assert.True(t, o.Wake)
		assert.Equal(t, state.Spec{CPU: "2", Memory: "3Gi"}, o.Spec)

		o, err = parse(t, newCmdCreate, "w-1", "--rank", "king")
		require.Error(t, err)
		assert.Equal(t, ExitUsage, exitCode(err), "%v", err)
		assert.Nil(t, o, "a refused rank never runs")

		o, err = parse(t, newCmdCreate, "w-1", "w-2", "w-3", "--colony", "lab")
		require.NoError(t, err)
		assert.Equal(t, []string{"w-1", "w-2", "w-3"}, o.IDs)

		for _, args := range [][]string{{}, {"w-1", "w-2", "w-1"}, {"w-1", "Bad_Id"}} {
			o, err = parse(t, newCmdCreate, args...)
			require.Error(t, err, "%v", args)
			assert.Equal(t, ExitUsage, exitCode(err), "%v: %v", args, err)
			assert.Nil(t, o, "%v never runs", args)
		}
	})
	t.Run("delete", func(t *testing.T) {
		o, err := parse(t, newCmdDelete, "a", "b", "--purge-home")
		require.NoError(t, err)
		assert.Equal(t, []string{"a", "b"}, o.IDs)
		assert.True(t, o.PurgeHome)
		assert.False(t, o.Orphan)
	})
	t.Run("events", func(t *testing.T) {
		o, err := parse(t, newCmdEvents, "a", "--tail", "5")
		require.NoError(t, err)
		assert.Equal(t, "a", o.ID)
		assert.Equal(t, 5, o.Tail)

		assert.False(t, o.Watch)
		assert.Equal(t, DefaultWatchInterval, o.Interval)

		o, err = parse(t, newCmdEvents, "a", "--tail", "5", "--since", "3")
		require.Error(t, err, "--tail and --since exclude each other")
		assert.Nil(t, o)

		o, err = parse(t, newCmdEvents, "a", "-w", "--watch-interval", "500ms", "--tail", "3")
		require.NoError(t, err)
		assert.True(t, o.Watch)
		assert.Equal(t, 500*time.Millisecond, o.Interval)
		for _, bad := range [][]string{{"a", "-w", "--limit", "3"}, {"a", "-w", "--watch-interval", "10ms"}} {
			o, err = parse(t, newCmdEvents, bad...)
			require.Error(t, err, "%v", bad)
			assert.Equal(t, ExitUsage, exitCode(err), "%v", err)
			assert.Nil(t, o)
		}
	})
	t.Run("status", func(t *testing.T) {
		o, err := parse(t, newCmdStatus, "a", "b", "--watch")
		require.NoError(t, err)
		assert.Equal(t, []string{"a", "b"}, o.IDs)
		assert.True(t, o.Watch)
		assert.Equal(t, DefaultWatchInterval, o.Interval)

		o, err = parse(t, newCmdStatus, "-w", "--watch-interval", "0s")
		require.Error(t, err)
		assert.Equal(t, ExitUsage, exitCode(err), "%v", err)
		assert.Contains(t, err.Error(), "--watch-interval")
		assert.Nil(t, o)
	})
	t.Run("logs", func(t *testing.T) {
		o, err := parse(t, newCmdLogs, "a", "-f", "--tail", "20", "-p")
		require.NoError(t, err)
		assert.Equal(t, logsOptions{f: o.f, ID: "a", Follow: true, Tail: 20, Previous: true}, *o)
	})
	t.Run("list", func(t *testing.T) {
		o, err := parse(t, newCmdList, "--colony", "lab")
		require.NoError(t, err)
		assert.Equal(t, "lab", o.Colony)
	})
	t.Run("wake sleep stop", func(t *testing.T) {
		o, err := parse(t, newCmdWake, "a", "b", "--wait", "30s")
		require.NoError(t, err)
		assert.Equal(t, []string{"a", "b"}, o.IDs)
		assert.Equal(t, state.Running, o.desired)
		assert.Equal(t, 30*time.Second, o.Wait)

		o, err = parse(t, newCmdWake, "a", "--wait", "-1s")
		require.Error(t, err)
		assert.Equal(t, ExitUsage, exitCode(err))
		assert.Nil(t, o)

		o, err = parse(t, newCmdSleep, "a")
		require.NoError(t, err)
		assert.Equal(t, state.Paused, o.desired)
		o, err = parse(t, newCmdStop, "a")
		require.NoError(t, err)
		assert.Equal(t, state.Stopped, o.desired)
	})
	t.Run("check", func(t *testing.T) {
		o, err := parse(t, newCmdCheck)
		require.NoError(t, err)
		assert.NotNil(t, o)
		_, err = parse(t, newCmdCheck, "extra")
		require.Error(t, err, "check takes no arguments")
	})
	t.Run("bridge", func(t *testing.T) {
		o, err := parse(t, newCmdBridge, "--addr", "127.0.0.1:9", "--agent", "echo", "--permission-mode", "")
		require.NoError(t, err)
		assert.Equal(t, "127.0.0.1:9", o.Addr)
		assert.Equal(t, "echo", o.Agent)
		assert.Empty(t, o.PermissionMode)
		assert.True(t, o.Prestart, "on by default")

		o, err = parse(t, newCmdBridge, "--prestart=false")
		require.NoError(t, err)
		assert.False(t, o.Prestart)

		o, err = parse(t, newCmdBridge, "--agent", "gpt")
		require.Error(t, err)
		assert.Nil(t, o)
	})
	t.Run("init", func(t *testing.T) {
		o, err := parse(t, newCmdInit, "--runtime", "kube", "--agent", "echo", "--operator", "alice", "--backoff-initial", "2s")
		require.NoError(t, err)
		assert.Equal(t, "kube", o.Runtime)
		assert.Equal(t, "echo", o.Agent)
		assert.Equal(t, "alice", o.Operator)
		assert.Equal(t, 2*time.Second, o.Recovery.BackoffInitial)

		o, err = parse(t, newCmdInit, "--operator", "alice", "--no-operator")
		require.Error(t, err, "--operator and --no-operator exclude each other")
		assert.Nil(t, o)
	})
	t.Run("store copy", func(t *testing.T) {
		o, err := parse(t, newCmdStoreCopy, "/tmp/a", "postgres://db/colony")
		require.NoError(t, err)
		assert.Equal(t, "/tmp/a", o.From)
		assert.Equal(t, "postgres://db/colony", o.To)
	})
	t.Run("token create revoke list", func(t *testing.T) {
		o, err := parse(t, newCmdTokenCreate, "--operator", "bob")
		require.NoError(t, err)
		assert.Equal(t, "bob", o.Name)
		o, err = parse(t, newCmdTokenCreate, "--operator", "Bob!")
		require.Error(t, err)
		assert.Nil(t, o)
		o, err = parse(t, newCmdTokenRevoke, "--operator", "bob")
		require.NoError(t, err)
		assert.Equal(t, "bob", o.Name)
		l, err := parse(t, newCmdTokenList, "--operator")
		require.NoError(t, err)
		assert.True(t, l.Operators)
	})
}
