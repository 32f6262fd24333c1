package pgstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/storetest"
)

// A spore's pod options are one json document in spec_pod, NULL for none,
// and a document that breaks their grammar (written behind the store's
// back) is a CorruptError naming the row and the field, never a spore.
func TestPodOptionsColumn(t *testing.T) {
	s, url := newStoreURL(t)
	ctx := context.Background()
	with := storetest.Spore("one")
	with.Spec.Pod = &state.PodOptions{RuntimeClassName: "gvisor", Labels: map[string]string{"team": "moss"}}
	require.NoError(t, s.Update(ctx, func(tx state.Tx) error {
		if err := tx.CreateSpore(ctx, with); err != nil {
			return err
		}
		return tx.CreateSpore(ctx, storetest.Spore("two"))
	}))

	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	column := func(id string) *string {
		var doc *string
		require.NoError(t, conn.QueryRow(ctx, `SELECT spec_pod::text FROM sporectl.spores WHERE id = $1`, id).Scan(&doc))
		return doc
	}
	doc := column("one")
	require.NotNil(t, doc)
	require.JSONEq(t, `{"runtime_class_name":"gvisor","labels":{"team":"moss"}}`, *doc)
	require.Nil(t, column("two"), "no pod options: NULL")

	for name, bad := range map[string]string{
		"reserved label": `{"labels":{"sporectl.dev/spore":"two"}}`,
		"not an object":  `[1]`,
		"unknown shape":  `{"labels":"team"}`,
	} {
		want := map[string]string{"reserved label": `spec.pod.labels["sporectl.dev/spore"]`}[name]
		adminExec(t, url, `UPDATE sporectl.spores SET spec_pod = $1 WHERE id = 'two'`, bad)
		err := s.View(ctx, func(tx state.Tx) error { _, err := tx.Spore(ctx, "two"); return err })
		var ce *state.CorruptError
		require.ErrorAs(t, err, &ce, name)
		require.Contains(t, ce.Error(), "id=two", name)
		require.Contains(t, ce.Error(), want, name)
		rep, err := s.Check(ctx)
		require.NoError(t, err)
		require.False(t, rep.OK(), name)
	}
}
