package pgstore

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sporectl/sporectl/state"
)

// Store is a colony's state in one PostgreSQL database.
type Store struct {
	pool     *pgxpool.Pool
	opts     Options
	location string // the URL without password
	version  int    // schema version found at open
	red      redactor
}

var _ state.Store = (*Store)(nil)

// Open connects to an existing store. A database without the sporectl
// schema is state.ErrNoStore (wrapped); a schema newer or older than this
// binary is *state.IncompatibleError; a server that cannot be reached, or
// refuses the credentials or the database, is *state.UnavailableError.
func Open(ctx context.Context, rawURL string, opts Options) (*Store, error) {
	s, err := connect(ctx, rawURL, opts)
	if err != nil {
		return nil, err
	}
	v, err := s.schemaVersion(ctx)
	if err == nil && v == 0 {
		err = fmt.Errorf("open %s: %w (run `sporectl init`)", s.location, state.ErrNoStore)
	}
	if err == nil && v != latestVersion() {
		err = incompatible(s.location, v)
	}
	if err != nil {
		s.pool.Close()
		return nil, s.red.redact(err)
	}
	s.version = v
	return s, nil
}

// Init creates the schema in an empty database, or upgrades an older one,
// and reports whether it created it. settings are written only when the
// store is created. A schema newer than this binary is refused.
func Init(ctx context.Context, rawURL string, settings state.Settings, opts Options) (*Store, bool, error) {
	s, err := connect(ctx, rawURL, opts)
	if err != nil {
		return nil, false, err
	}
	created, err := s.migrate(ctx, settings)
	if err != nil {
		s.pool.Close()
		return nil, false, s.red.redact(err)
	}
	s.version = latestVersion()
	return s, created, nil
}

// connect builds the pool and proves the server answers, retrying with
// backoff a bounded number of times. Credentials and a missing database
// are not retried: waiting cannot fix them.
func connect(ctx context.Context, rawURL string, opts Options) (*Store, error) {
	opts = opts.withDefaults()
	loc, err := Location(rawURL)
	if err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		// pgx redacts the password in parse errors, but only the
		// location is known to be safe to print.
		return nil, &state.InvalidError{Field: "store URL", Value: loc, Reason: "not a valid PostgreSQL URL"}
	}
	red := redactor{secret: cfg.ConnConfig.Password}
	cfg.MaxConns = opts.MaxConns
	cfg.ConnConfig.ConnectTimeout = opts.ConnectTimeout
	if opts.Tracer != nil {
		cfg.ConnConfig.Tracer = opts.Tracer
	}
	rp := cfg.ConnConfig.RuntimeParams
	rp["statement_timeout"] = strconv.FormatInt(opts.StatementTimeout.Milliseconds(), 10)
	rp["idle_in_transaction_session_timeout"] = strconv.FormatInt(opts.IdleInTxTimeout.Milliseconds(), 10)
	// A committed Update must survive a server crash, whatever the
	// server's default says.
	rp["synchronous_commit"] = "on"
	if _, ok := rp["application_name"]; !ok {
		rp["application_name"] = "sporectl"
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, red.redact(classify("connect to "+loc, err))
	}
	s := &Store{pool: pool, opts: opts, location: loc, red: red}
	if err := s.ping(ctx); err != nil {
		pool.Close()
		return nil, red.redact(err)
	}
	return s, nil
}

func (s *Store) ping(ctx context.Context) error {
	delay := 200 * time.Millisecond
	var err error
	for attempt := 1; attempt <= s.opts.ConnectAttempts; attempt++ {
		err = s.pool.Ping(ctx)
		if err == nil {
			return nil
		}
		if permanentConnectCode(err) || ctx.Err() != nil || attempt == s.opts.ConnectAttempts {
			break
		}
		// Info, not Warn: a retry that succeeds is no news; -v shows it.
		s.opts.Logger.Info("postgres store not reachable, retrying",
			"location", s.location, "attempt", attempt, "in", delay, "err", s.red.redact(err))
		select {
		case <-ctx.Done():
			return classify("connect to "+s.location, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(delay*2, 2*time.Second)
	}
	return classify("connect to "+s.location, err)
}

// Location returns the store URL without its password, for Info, logs and
// errors.
func Location(rawURL string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return "", &state.InvalidError{Field: "store URL", Value: schemeOnly(rawURL), Reason: "must be a postgres:// URL"}
	}
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	q := u.Query()
	if q.Has("password") {
		q.Del("password")
		u.RawQuery = q.Encode()
	}
	return u.String(), nil
}

// schemeOnly keeps an unparseable URL out of an error: it may hold a
// password in a place url.Parse could not find.
func schemeOnly(raw string) string {
	if i := strings.Index(raw, "://"); i >= 0 {
		return raw[:i+3] + "…"
	}
	return "…"
}

func incompatible(loc string, found int) error {
	e := &state.IncompatibleError{Where: loc, Found: found, Newest: latestVersion()}
	if found < latestVersion() {
		e.Details = "the schema is older than this sporectl; run `sporectl init` to upgrade it"
	}
	return e
}

// Info says what and where the store is; Location never holds a password.
func (s *Store) Info() state.Info {
	return state.Info{Backend: "postgres", Location: s.location, FormatVersion: s.version}
}

// Close releases the pool's connections.
func (s *Store) Close() error {
	s.pool.Close()
	return nil
}
