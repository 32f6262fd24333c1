package pgstore

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/sporectl/sporectl/state"
)

// Migrations are NNNN_name.sql files, applied in order; version N is the
// schema after NNNN. A released file is never edited: a change is a new
// file.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

var migrations = mustLoadMigrations()

func mustLoadMigrations() []migration {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		panic(err)
	}
	sort.Strings(names)
	var out []migration
	for i, name := range names {
		base := strings.TrimPrefix(name, "migrations/")
		v, err := strconv.Atoi(strings.SplitN(base, "_", 2)[0])
		if err != nil || v != i+1 {
			panic(fmt.Sprintf("pgstore: migration %s is out of sequence (want version %d)", base, i+1))
		}
		b, err := migrationFS.ReadFile(name)
		if err != nil {
			panic(err)
		}
		out = append(out, migration{version: v, name: base, sql: string(b)})
	}
	return out
}

func latestVersion() int { return len(migrations) }

// migrateLockKey serializes concurrent Inits on one database (an advisory
// lock held until the migration transaction ends). "sporemig" in ASCII.
const migrateLockKey = 0x73706f72656d6967

// schemaVersion reads the applied version; 0 means no sporectl schema.
// Two statements, because a query naming a missing table fails to parse.
func (s *Store) schemaVersion(ctx context.Context) (int, error) {
	op := "read schema version of " + s.location
	var exists bool
	if err := s.pool.QueryRow(ctx, `SELECT to_regclass('sporectl.schema_version') IS NOT NULL`).Scan(&exists); err != nil {
		return 0, classify(op, err)
	}
	if !exists {
		return 0, nil
	}
	var v int
	if err := s.pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM sporectl.schema_version`).Scan(&v); err != nil {
		return 0, classify(op, err)
	}
	return v, nil
}

// migrate applies every missing migration in one transaction and, when it
// created the schema, writes the initial settings in that same
// transaction: a crash leaves either no store or a whole one.
func (s *Store) migrate(ctx context.Context, settings state.Settings) (created bool, err error) {
	doc, err := encodeSettings(settings)
	if err != nil {
		return false, err
	}
	op := "initialise postgres store " + s.location
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return false, classify(op, err)
	}
	defer rollback(ctx, tx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrateLockKey)); err != nil {
		return false, classify(op, err)
	}
	if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS sporectl;
		CREATE TABLE IF NOT EXISTS sporectl.schema_version (
			version    integer PRIMARY KEY,
			name       text NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return false, classify(op, err)
	}
	var found int
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM sporectl.schema_version`).Scan(&found); err != nil {
		return false, classify(op, err)
	}
	if found > latestVersion() {
		return false, incompatible(s.location, found)
	}
	for _, m := range migrations[found:] {
		s.opts.Logger.Info("applying schema migration", "location", s.location, "version", m.version, "name", m.name)
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return false, classify(fmt.Sprintf("%s: apply migration %s", op, m.name), err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO sporectl.schema_version (version, name) VALUES ($1, $2)`, m.version, m.name); err != nil {
			return false, classify(op, err)
		}
	}
	if found == 0 {
		if _, err := tx.Exec(ctx, `INSERT INTO sporectl.settings (doc) VALUES ($1)`, doc); err != nil {
			return false, classify(op, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return false, classify(op, err)
	}
	return found == 0, nil
}

func encodeSettings(st state.Settings) (string, error) {
	if err := st.Validate(); err != nil {
		return "", err
	}
	for _, f := range []struct{ name, v string }{
		{"runtime", st.Runtime}, {"agent", st.Agent}, {"namespace", st.Namespace},
		{"storage class", st.StorageClass}, {"image", st.Image},
		{"default image", st.DefaultSpec.Image}, {"default cpu", st.DefaultSpec.CPU},
		{"default memory", st.DefaultSpec.Memory}, {"default storage", st.DefaultSpec.Storage},
	} {
		if err := checkText("settings "+f.name, f.v); err != nil {
			return "", err
		}
	}
	b, err := json.Marshal(st)
	if err != nil {
		return "", fmt.Errorf("encode settings: %w", err)
	}
	return string(b), nil
}
