package statetest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/pgstore/pgtest"
	"github.com/sporectl/sporectl/state/statetest"
)

// recorder is a testing.TB whose failures and cleanups are its own: a
// test hands it to a helper, runs the cleanups itself and reads what the
// helper reported, with no real test failing. A Fatalf (a helper that
// could not make its store) is the real test's.
type recorder struct {
	testing.TB
	errors   []string
	cleanups []func()
}

func (r *recorder) Helper() {}

func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

// end runs the cleanups as testing does, last registered first.
func (r *recorder) end() {
	for _, f := range slices.Backward(r.cleanups) {
		f()
	}
	r.cleanups = nil
}

func spore(id string) state.Spore {
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	return state.Spore{Wish: state.Wish{ID: id, Colony: "lab", Rank: state.RankSpore, Desired: state.Paused, Created: now, Updated: now}}
}

// The check a store made by Dir runs when its test ends passes a store
// a test only used, and fails the test, naming the damage, when the test
// left it inconsistent: the proof that every harness's check can fail.
func TestDirChecksTheStoreWhenTheTestEnds(t *testing.T) {
	for _, tc := range []struct {
		name string
		// damage is done to the store's directory before the test ends.
		damage func(t *testing.T, root string)
		want   string // in the failure; "" for none
	}{
		{"left consistent", func(*testing.T, string) {}, ""},
		{"an event log's bytes flipped", func(t *testing.T, root string) {
			p := eventLog(t, root)
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			require.NotEmpty(t, b)
			for i := range b {
				b[i] ^= 0xff
			}
			require.NoError(t, os.WriteFile(p, b, 0o600))
		}, "inconsistent at the end of the test"},
		{"an event log removed", func(t *testing.T, root string) {
			require.NoError(t, os.Remove(eventLog(t, root)))
		}, "missing, but 1 events"},
		{"the live commit log removed", func(t *testing.T, root string) {
			logs, err := filepath.Glob(filepath.Join(root, "txlog.*"))
			require.NoError(t, err)
			require.Len(t, logs, 1)
			require.NoError(t, os.Remove(logs[0]))
		}, "inconsistent at the end of the test"},
		{"the store removed", func(t *testing.T, root string) {
			require.NoError(t, os.RemoveAll(root))
		}, "check the dir store"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{TB: t}
			st := statetest.Dir(rec, state.Settings{Runtime: "local"})
			seed(t, rec, st)
			require.Empty(t, rec.errors, "the store is consistent before the damage")
			tc.damage(t, st.Info().Location)

			rec.end()
			if tc.want == "" {
				require.Empty(t, rec.errors)
				return
			}
			require.Len(t, rec.errors, 1, "one failure: the check's")
			require.Contains(t, rec.errors[0], tc.want)
			require.Contains(t, rec.errors[0], st.Info().Location, "the failure names the store")
		})
	}
}

// seed gives the store two spores, a with one event.
func seed(t *testing.T, tb testing.TB, st state.Store) {
	statetest.Create(tb, st, spore("a"), spore("b"))
	require.NoError(t, st.Update(t.Context(), func(tx state.Tx) error {
		_, err := tx.Append(t.Context(), "a", []state.Event{{Kind: state.KindPrompt, From: "user:alice", At: time.Now().UTC(), Text: "hello"}})
		return err
	}))
}

func eventLog(t *testing.T, root string) string {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(root, "events", "a.*"))
	require.NoError(t, err)
	require.Len(t, logs, 1, "spore a's event log")
	return logs[0]
}

// CheckDirOnCleanup checks a store something else made at root: passes
// when it is consistent, fails when it is damaged or was never made.
func TestCheckDirOnCleanup(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, root string)
		want   string
	}{
		{"consistent", func(*testing.T, string) {}, ""},
		{"an event log removed", func(t *testing.T, root string) {
			require.NoError(t, os.Remove(eventLog(t, root)))
		}, "inconsistent"},
		{"never made", func(t *testing.T, root string) {
			require.NoError(t, os.RemoveAll(root))
		}, "open the store at"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "store")
			made := &recorder{TB: t}
			st := statetest.DirAt(made, root, state.Settings{Runtime: "local"})
			seed(t, made, st)
			made.end()
			require.Empty(t, made.errors)

			rec := &recorder{TB: t}
			statetest.CheckDirOnCleanup(rec, root)
			tc.damage(t, root)
			rec.end()
			if tc.want == "" {
				require.Empty(t, rec.errors)
				return
			}
			require.Len(t, rec.errors, 1)
			require.Contains(t, rec.errors[0], tc.want)
		})
	}
}

// Counting counts write transactions, not reads.
func TestCountingCountsWrites(t *testing.T) {
	st := &statetest.Counting{Store: statetest.Dir(t, state.Settings{Runtime: "local"})}
	statetest.Create(t, st, spore("a"))
	require.Equal(t, int64(1), st.Updates.Load())
	require.Equal(t, "a", statetest.Spore(t, st, "a").ID)
	require.Empty(t, statetest.Events(t, st, "a"))
	require.Equal(t, int64(1), st.Updates.Load(), "reads are not counted")
}

// ViewValue returns what its read returned, and the zero value with the
// read's error.
func TestViewValue(t *testing.T) {
	st := statetest.Dir(t, state.Settings{Runtime: "local"})
	statetest.Create(t, st, spore("a"))
	ctx := t.Context()
	sp, err := state.ViewValue(ctx, st, func(tx state.Tx) (state.Spore, error) { return tx.Spore(ctx, "a") })
	require.NoError(t, err)
	require.Equal(t, "lab", sp.Colony)
	sp, err = state.ViewValue(ctx, st, func(tx state.Tx) (state.Spore, error) {
		return state.Spore{Wish: state.Wish{ID: "half-read"}}, fmt.Errorf("read: %w", state.ErrNotFound)
	})
	require.ErrorIs(t, err, state.ErrNotFound)
	require.Zero(t, sp)
}

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.StopLazy()
	os.Exit(code)
}

// The same on PostgreSQL: a store made by Postgres, and one opened by
// URL, fail their test when it left them inconsistent, and the failure
// holds no password.
func TestPostgresChecksTheStoreWhenTheTestEnds(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage string // SQL; "" for none
		want   string
	}{
		{"left consistent", "", ""},
		{"an event lost", `DELETE FROM sporectl.events WHERE spore_id = 'a'`, "no events but last_seq is 1"},
		{"a bad spore row", `UPDATE sporectl.spores SET colony = 'Not Valid' WHERE id = 'b'`, "colony"},
	} {
		for _, made := range []string{"Postgres", "CheckPostgresOnCleanup"} {
			t.Run(tc.name+"/"+made, func(t *testing.T) {
				rec := &recorder{TB: t}
				st, url := statetest.Postgres(rec, state.Settings{Runtime: "local"})
				seed(t, rec, st)
				checked := rec
				if made == "CheckPostgresOnCleanup" {
					// The check of a store something else made runs as the
					// only cleanup of its own recorder.
					checked = &recorder{TB: t}
					statetest.CheckPostgresOnCleanup(checked, url)
					defer rec.end() // drops the database (its check is not this row's)
				}
				if tc.damage != "" {
					conn, err := pgx.Connect(t.Context(), url)
					require.NoError(t, err)
					_, err = conn.Exec(t.Context(), tc.damage)
					require.NoError(t, err)
					require.NoError(t, conn.Close(t.Context()))
				}
				checked.end()
				if tc.want == "" {
					require.Empty(t, checked.errors)
					return
				}
				require.Len(t, checked.errors, 1, "one failure: the check's")
				require.Contains(t, checked.errors[0], tc.want)
				require.NotContains(t, checked.errors[0], pgtest.Lazy(t).Password)
			})
		}
	}
}
