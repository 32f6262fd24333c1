// Package pgtest runs a throwaway PostgreSQL server for tests: initdb into
// a temporary directory, postgres on a free loopback port with password
// authentication, one database per test, everything removed afterwards.
//
// Postgres refuses to run as root, so as root the server runs as the
// unprivileged "postgres" user (created when missing). Binaries come from
// $SPORECTL_PG_BIN, then PATH, then /usr/lib/postgresql/*/bin
// (.ci/postgres.sh installs them). When no server can be started, tests
// skip — unless $CI is set, where they fail loudly.
//
// The package must never touch a server it did not start.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sporectl/sporectl/internal/childproc"
)

// Server is one running (or stopped) test cluster.
type Server struct {
	BinDir   string
	root     string // temporary directory holding data, socket and log
	Port     int
	User     string
	Password string
	cred     *syscall.Credential // nil when not root
	// mu guards cmd and exited: a test's cleanup may Stop the server
	// while a fault it injected stops it too.
	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	dbSeq  atomic.Int64
}

// Start creates and starts a cluster.
func Start(ctx context.Context) (*Server, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	root, err := os.MkdirTemp("", "sporectl-pgtest-")
	if err != nil {
		return nil, fmt.Errorf("make server directory: %w", err)
	}
	s := &Server{BinDir: bin, root: root, User: "sporetest", Password: randomPassword()}
	if err := s.setup(ctx); err != nil {
		_ = os.RemoveAll(root)
		return nil, err
	}
	if err := s.Start(ctx); err != nil {
		_ = os.RemoveAll(root)
		return nil, err
	}
	return s, nil
}

func (s *Server) dataDir() string { return filepath.Join(s.root, "data") }
func (s *Server) logFile() string { return filepath.Join(s.root, "postgres.log") }

func (s *Server) setup(ctx context.Context) error {
	if os.Geteuid() == 0 {
		cred, err := unprivileged()
		if err != nil {
			return err
		}
		s.cred = cred
		if err := os.Chown(s.root, int(cred.Uid), int(cred.Gid)); err != nil {
			return fmt.Errorf("hand server directory to uid %d: %w", cred.Uid, err)
		}
	}
	pwfile := filepath.Join(s.root, "pw")
	if err := os.WriteFile(pwfile, []byte(s.Password+"\n"), 0o600); err != nil {
		return fmt.Errorf("write password file: %w", err)
	}
	if s.cred != nil {
		if err := os.Chown(pwfile, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return fmt.Errorf("chown password file: %w", err)
		}
	}
	out, err := s.command(ctx, "initdb", "-D", s.dataDir(), "-U", s.User, "--pwfile="+pwfile,
		"--auth=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions").CombinedOutput()
	_ = os.Remove(pwfile)
	if err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, out)
	}
	return nil
}

// command runs a server binary as the server's user.
func (s *Server) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(s.BinDir, name), args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C", "PGDATA="+s.dataDir())
	cmd.Dir = s.root
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	return cmd
}

// Start (re)starts the postmaster on the same port and waits until it
// accepts connections. It runs as this process's child with a
// parent-death signal, so a test binary killed by a timeout leaves no
// server behind.
func (s *Server) Start(ctx context.Context) error {
	if s.Port == 0 {
		p, err := freePort()
		if err != nil {
			return err
		}
		s.Port = p
	}
	logf, err := os.OpenFile(s.logFile(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("open server log: %w", err)
	}
	cmd := exec.Command(filepath.Join(s.BinDir, "postgres"), "-D", s.dataDir(),
		"-p", strconv.Itoa(s.Port), "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+s.root,
		"-c", "max_connections=200", "-c", "shared_buffers=256MB", "-c", "log_min_messages=warning")
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Pdeathsig: syscall.SIGKILL, Setpgid: true}
	exited := make(chan struct{})
	if err := childproc.Start(cmd, func(error) { logf.Close(); close(exited) }); err != nil {
		logf.Close()
		return fmt.Errorf("start postgres: %w", err)
	}
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	deadline := time.Now().Add(60 * time.Second)
	for {
		conn, err := pgx.Connect(ctx, s.URL("postgres"))
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(s.logFile())
			return fmt.Errorf("postgres exited while starting: %s", tail(log))
		default:
		}
		if time.Now().After(deadline) {
			_ = s.Stop("immediate")
			return fmt.Errorf("postgres did not accept connections within 60s: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop stops the server with pg_ctl in the given mode ("fast", or
// "immediate" to simulate a crash: no checkpoint, recovery on restart).
// Concurrent calls stop it once; the others wait for it and return nil.
func (s *Server) Stop(mode string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	out, err := s.command(context.Background(), "pg_ctl", "stop", "-D", s.dataDir(), "-m", mode, "-w", "-t", "60").CombinedOutput()
	select {
	case <-s.exited:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	s.cmd = nil
	if err != nil {
		return fmt.Errorf("pg_ctl stop -m %s: %w: %s", mode, err, out)
	}
	return nil
}

// Close stops the server and removes its files.
func (s *Server) Close() error {
	err := s.Stop("fast")
	return errors.Join(err, os.RemoveAll(s.root))
}

// URL is a connection URL for database db, with the password in it.
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://%s:%s@127.0.0.1:%d/%s?sslmode=disable", s.User, s.Password, s.Port, db)
}

// CreateDatabase makes a fresh empty database and returns its URL.
func (s *Server) CreateDatabase(ctx context.Context) (name, url string, err error) {
	name = fmt.Sprintf("t%d_%d", os.Getpid(), s.dbSeq.Add(1))
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return "", "", fmt.Errorf("connect to create database: %w", err)
	}
	defer conn.Close(ctx)
	// The name is generated above from digits; identifiers cannot be
	// parameters.
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE template0"); err != nil {
		return "", "", fmt.Errorf("create database %s: %w", name, err)
	}
	return name, s.URL(name), nil
}

// DropDatabase removes a database made by CreateDatabase, ending any
// session still connected to it.
func (s *Server) DropDatabase(ctx context.Context, name string) error {
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return fmt.Errorf("connect to drop database: %w", err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
	return err
}

func findBin() (string, error) {
	if d := os.Getenv("SPORECTL_PG_BIN"); d != "" {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err != nil {
			return "", fmt.Errorf("SPORECTL_PG_BIN=%s holds no initdb: %w", d, err)
		}
		return d, nil
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		return filepath.Dir(p), nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Strings(dirs)
	if len(dirs) > 0 {
		return filepath.Dir(dirs[len(dirs)-1]), nil
	}
	return "", errors.New("no PostgreSQL server binaries (initdb) found: set SPORECTL_PG_BIN or run .ci/postgres.sh")
}

// unprivileged returns the credentials of the "postgres" user, creating a
// system user of that name when it does not exist.
func unprivileged() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		if out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", "postgres").CombinedOutput(); err != nil {
			return nil, fmt.Errorf("create user postgres to run the test server: %w: %s", err, out)
		}
		if u, err = user.Lookup("postgres"); err != nil {
			return nil, fmt.Errorf("look up user postgres: %w", err)
		}
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func randomPassword() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "pw-" + hex.EncodeToString(b)
}

func tail(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}
