package cli

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/statetest"
	"github.com/sporectl/sporectl/state/storetest"
)

// On PostgreSQL, repair sets a spore row that does not read and an event
// row that does not read aside into sporectl.damaged, names them, and
// leaves check clean (statetest.Postgres checks the store at cleanup).
func TestRepairOnPostgres(t *testing.T) {
	st, url := statetest.Postgres(t, state.Settings{Runtime: "local"})
	ctx := context.Background()
	require.NoError(t, st.Update(ctx, func(tx state.Tx) error {
		for _, id := range []string{"a", "b", "c"} {
			if err := tx.CreateSpore(ctx, storetest.Spore(id)); err != nil {
				return err
			}
			if _, err := tx.Append(ctx, id, []state.Event{{Kind: state.KindPrompt, Text: "x"}, {Kind: state.KindPrompt, Text: "y"}}); err != nil {
				return err
			}
		}
		return nil
	}))
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `UPDATE sporectl.spores SET colony = 'Not Valid' WHERE id = 'a';
		UPDATE sporectl.events SET line = 'not json'::bytea WHERE spore_id = 'b' AND seq = 1`)
	require.NoError(t, err)
	require.Equal(t, ExitCorrupt, run(t, url, "check").code)

	r := run(t, url, "repair", "a", "b", "--dry-run")
	require.Equal(t, ExitOK, r.code, r.err)
	require.Contains(t, r.out, "would set the spore aside")
	require.Contains(t, r.out, "would replace 1 line(s)")
	var n int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM sporectl.damaged`).Scan(&n))
	require.Zero(t, n, "a dry run writes nothing")

	r = run(t, url, "repair", "a", "b", "-o", "json")
	require.Equal(t, ExitOK, r.code, r.err)
	require.Contains(t, r.out, `"removed": true`)
	require.Contains(t, r.out, `"replaced": 1`)
	require.Contains(t, r.out, `table sporectl.damaged id=`)
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM sporectl.damaged`).Scan(&n))
	require.Equal(t, 4, n, "a's row and two events, b's event")
	require.Equal(t, ExitOK, run(t, url, "check").code)
	out := mustRun(t, url, "events", "b")
	require.Contains(t, out, "repaired")

	require.Equal(t, ExitNotFound, run(t, url, "repair", "a").code, "a is set aside")
}
