package main

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// Bad flags are exit 2 and say what is wanted, before any server starts.
func TestRunRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"-sporectl", "/bin/true"},
		{"-dir", t.TempDir()},
		{"-sporectl", "/bin/true", "-dir", t.TempDir(), "-spores", "0"},
		{"-sporectl", "/bin/true", "-dir", t.TempDir(), "extra"},
		{"-no-such-flag"},
	} {
		var out strings.Builder
		require.Equal(t, 2, run(t.Context(), args, &out), "args %q", args)
		require.NotEmpty(t, out.String(), "args %q say why", args)
	}
}

// A pod address where something listens would let a bridge call
// succeed, so it is refused; a closed port is what the fleet needs.
func TestRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	err = refused("127.0.0.1", port)
	require.ErrorContains(t, err, "something listens on 127.0.0.1:"+strconv.Itoa(port))

	require.NoError(t, l.Close())
	require.NoError(t, refused("127.0.0.1", port), "a closed port refuses the connection")
}

// The default pod address is one the API server's proxy dials: not
// loopback, not link-local.
func TestHostIP(t *testing.T) {
	ip, err := hostIP()
	if err != nil {
		require.ErrorContains(t, err, "no IPv4 address outside loopback")
		return
	}
	parsed := net.ParseIP(ip)
	require.NotNil(t, parsed, ip)
	require.NotNil(t, parsed.To4(), "IPv4: %s", ip)
	require.False(t, parsed.IsLoopback(), ip)
	require.False(t, parsed.IsLinkLocalUnicast(), ip)
}

// each calls fn once per index and returns every error, not the first.
func TestEach(t *testing.T) {
	var calls atomic.Int32
	seen := make([]atomic.Bool, 100)
	err := each(len(seen), 7, func(i int) error {
		calls.Add(1)
		seen[i].Store(true)
		if i%40 == 0 {
			return errors.New("fail " + strconv.Itoa(i))
		}
		return nil
	})
	require.Equal(t, int32(len(seen)), calls.Load())
	for i := range seen {
		require.True(t, seen[i].Load(), "index %d", i)
	}
	for _, want := range []string{"fail 0", "fail 40", "fail 80"} {
		require.ErrorContains(t, err, want)
	}
	require.NoError(t, each(3, 8, func(int) error { return nil }))
}
