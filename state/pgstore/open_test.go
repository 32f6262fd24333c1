package pgstore_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/pgstore"
	"github.com/sporectl/sporectl/state/pgstore/pgtest"
)

// adminExec runs SQL on a test database behind the store's back, to set up
// states the store itself would never produce.
func adminExec(t *testing.T, url, sql string, args ...any) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql, args...)
	require.NoError(t, err)
}

func TestOpenMissingSchema(t *testing.T) {
	url := pgtest.NewDatabase(t)
	_, err := pgstore.Open(context.Background(), url, pgstore.Options{})
	require.ErrorIs(t, err, state.ErrNoStore)
	require.NotContains(t, err.Error(), pgtest.Shared(t).Password)
}

func TestInitIsIdempotentAndKeepsSettings(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	first := state.Settings{Runtime: "kube", Namespace: "spores"}
	s, created, err := pgstore.Init(ctx, url, first, pgstore.Options{})
	require.NoError(t, err)
	require.True(t, created)
	require.NoError(t, s.Close())

	s, created, err = pgstore.Init(ctx, url, state.Settings{Runtime: "local"}, pgstore.Options{})
	require.NoError(t, err)
	require.False(t, created, "second init creates nothing")
	defer s.Close()
	var got state.Settings
	require.NoError(t, s.View(ctx, func(tx state.Tx) error {
		var err error
		got, err = tx.Settings(ctx)
		return err
	}))
	require.Equal(t, first, got, "settings are written only on create")

	o, err := pgstore.Open(ctx, url, pgstore.Options{})
	require.NoError(t, err)
	defer o.Close()
	info := o.Info()
	require.Equal(t, "postgres", info.Backend)
	require.Positive(t, info.FormatVersion)
	require.NotContains(t, info.Location, pgtest.Shared(t).Password)
	require.Contains(t, info.Location, "127.0.0.1")
	rep, err := o.Check(ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%v", rep.Problems)
}

func TestConcurrentInitCreatesOnce(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	const n = 4
	results := make(chan bool, n)
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func() {
			s, created, err := pgstore.Init(ctx, url, state.Settings{Runtime: "local"}, pgstore.Options{})
			if err == nil {
				s.Close()
			}
			results <- created
			errs <- err
		}()
	}
	createdCount := 0
	for i := 0; i < n; i++ {
		require.NoError(t, <-errs)
		if <-results {
			createdCount++
		}
	}
	require.Equal(t, 1, createdCount)
}

func TestNewerSchemaRefused(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	s, _, err := pgstore.Init(ctx, url, state.Settings{Runtime: "local"}, pgstore.Options{})
	require.NoError(t, err)
	known := s.Info().FormatVersion
	require.NoError(t, s.Close())
	adminExec(t, url, `INSERT INTO sporectl.schema_version (version, name) VALUES ($1, 'from the future')`, known+1)

	var inc *state.IncompatibleError
	_, err = pgstore.Open(ctx, url, pgstore.Options{})
	require.ErrorAs(t, err, &inc)
	require.Equal(t, known+1, inc.Found)
	require.Equal(t, known, inc.Newest)
	_, _, err = pgstore.Init(ctx, url, state.Settings{}, pgstore.Options{})
	require.ErrorAs(t, err, &inc, "init never migrates a newer schema")
}

func TestConnectFailures(t *testing.T) {
	srv := pgtest.Shared(t)
	good := pgtest.NewDatabase(t)
	// A listener that never accepts: the TCP handshake completes and the
	// server then never answers, so only ConnectTimeout ends an attempt.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer silent.Close()
	hostURL := func(addr string) string {
		return fmt.Sprintf("postgres://%s:%s@%s/x?sslmode=disable", srv.User, srv.Password, addr)
	}
	const attempts, timeout = 3, 500 * time.Millisecond
	tests := []struct {
		name       string
		url        string
		retries    int           // warnings logged: permanent failures are not retried
		minElapsed time.Duration // proves each attempt waited its timeout
	}{
		{"wrong password", strings.Replace(good, srv.Password, srv.Password+"-wrong", 1), 0, 0},
		{"wrong database", srv.URL("no_such_db"), 0, 0},
		// Port 1 (tcpmux) has no listener on any machine this runs on.
		{"connection refused", hostURL("127.0.0.1:1"), attempts - 1, 0},
		{"server never answers", hostURL(silent.Addr().String()), attempts - 1, attempts * timeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&logs, nil))
			start := time.Now()
			_, err := pgstore.Open(context.Background(), tc.url, pgstore.Options{Logger: logger, ConnectAttempts: attempts, ConnectTimeout: timeout})
			elapsed := time.Since(start)
			var un *state.UnavailableError
			require.ErrorAs(t, err, &un)
			require.NotContains(t, err.Error(), srv.Password, "the password never appears in an error")
			require.NotContains(t, logs.String(), srv.Password, "the password never appears in a log")
			require.Equal(t, tc.retries, strings.Count(logs.String(), "retrying"), "error: %v; logs: %s", err, logs.String())
			require.GreaterOrEqual(t, elapsed, tc.minElapsed)
			require.Less(t, elapsed, 20*time.Second, "connection attempts are bounded; error: %v", err)
			t.Logf("%s after %v: %v", tc.name, elapsed.Round(time.Millisecond), err)
		})
	}
}

func TestBadURL(t *testing.T) {
	_, err := pgstore.Open(context.Background(), "mysql://root:hunter2@host/db", pgstore.Options{})
	var inv *state.InvalidError
	require.ErrorAs(t, err, &inv)
	require.NotContains(t, err.Error(), "hunter2")
	loc, err := pgstore.Location("postgres://u:hunter2@h:5432/db?sslmode=disable&password=hunter2")
	require.NoError(t, err)
	require.NotContains(t, loc, "hunter2")
	require.Contains(t, loc, "u@h:5432/db")
}
