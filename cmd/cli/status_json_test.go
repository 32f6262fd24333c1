package cli

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
)

// statusFleet is a status result of n spores with every field the JSON
// shape has set on some of them, text among them.
func statusFleet(n int, text string) statusList {
	var l statusList
	for i := range n {
		h := reconcile.SporeHealth{
			ID: "spore-" + string(rune('a'+i%26)), Colony: "default", Rank: state.RankSpore, Desired: state.Paused,
			Observed:  reconcile.Observed{Pod: reconcile.PodAbsent, Bridge: reconcile.BridgeDown},
			Effective: policy.Paused, Reason: "asleep: by a person", SleptBy: "person", LastSeq: uint64(i),
		}
		switch i % 4 {
		case 1:
			h.Reason, h.Observed.Reason = text, reconcile.Reason(text)
		case 2:
			h.Spend, h.Budget, h.OverBudget = &state.Spend{Tokens: 24}, &state.Budget{TokensPerDay: 20}, "24/20 tokens today"
			h.ReportedSpend = &state.Spend{Tokens: 3, CostMicros: 1}
		case 3:
			h.Observed = reconcile.Observed{Pod: reconcile.PodRunning, Bridge: reconcile.BridgeUp, Activity: bridge.StateIdle, Restarts: 2}
			h.Desired, h.Effective, h.Reason, h.SleptBy = state.Running, policy.Healthy, "", ""
		}
		l.Spores = append(l.Spores, h)
	}
	return l
}

// TestStatusJSONAsWholeDocument: status -o json writes its spores one by
// one (printer_list.go); the bytes are the whole document's as
// json.MarshalIndent prints it, as status printed before: for fleets of
// every size, empty and nil lists, orphans, and text JSON escapes.
func TestStatusJSONAsWholeDocument(t *testing.T) {
	cases := map[string]statusList{
		"nil spores":   {},
		"no spores":    {Result: reconcile.Result{Spores: []reconcile.SporeHealth{}}},
		"one":          statusFleet(1, ""),
		"many":         statusFleet(101, "text"),
		"many blocks":  statusFleet(5*listBlock+7, "esc \x1b[2J"),
		"whole blocks": statusFleet(4*listBlock, "text"),
		"escapes":      statusFleet(9, "esc \x1b[2J bidi \u202e <&> \" \\ \u2028 \n"),
		"orphans":      {Result: reconcile.Result{Spores: statusFleet(3, "").Spores, Orphans: []string{"x", "y"}}},
		"orphans only": {Result: reconcile.Result{Orphans: []string{"x"}}},
		"key in text":  statusFleet(5, "\n  \"spores\": null"),
	}
	for name, l := range cases {
		t.Run(name, func(t *testing.T) {
			requireWholeJSON(t, l)
		})
	}
}

func requireWholeJSON(t *testing.T, l statusList) {
	t.Helper()
	var want, got bytes.Buffer
	require.NoError(t, writeWholeJSON(&want, l))
	require.NoError(t, printTo(&got, "json", false, l))
	require.Equal(t, want.String(), got.String())
}

func FuzzStatusJSON(f *testing.F) {
	for _, s := range []string{"plain", "esc \x1b[2J", "bidi \u202e", "nul \x00", "ls \u2028", "\n  \"spores\": null", "<&>"} {
		f.Add(s, uint8(5))
	}
	f.Fuzz(func(t *testing.T, s string, n uint8) {
		s = strings.ToValidUTF8(s, "\uFFFD")
		l := statusFleet(int(n)*3, s)
		if n%3 == 0 {
			l.Orphans = []string{s}
		}
		requireWholeJSON(t, l)
	})
}

// TestStatusJSONOfAStore: a fleet's status -o json through the command,
// against the whole document of the same pass's result: the first, whose
// pass records each spore's health (the whole pass), and the next, of a
// fleet with nothing to record (the streamed pass, status_stream.go), in
// a fleet whose snapshot is read whole at open and one large enough to be
// read line by line; with a spore needing attention, whose exit code (3)
// and message are the whole pass's.
func TestStatusJSONOfAStore(t *testing.T) {
	for _, n := range []int{30, 400} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ctx := t.Context()
			root := t.TempDir()
			buildFleet(t, root, n)
			breakerOpen(t, root, "spore-00007")
			f, out, errOut := statusFactory(root)
			st, err := f.Store(ctx)
			require.NoError(t, err)
			defer st.Close()
			o := &statusOptions{f: f}
			done, looked, err := o.stream(ctx, st)
			require.NoError(t, err)
			require.False(t, done, "health not recorded yet: the whole pass")
			require.NotNil(t, looked, "the streamed pass's look, for the whole pass to take")
			require.Len(t, looked.Spores, 0, "every spore asleep: nothing running")
			require.Zero(t, out.Len())

			for _, pass := range []string{"whole", "streamed"} {
				out.Reset()
				errOut.Reset()
				require.Equal(t, ExitUnhealthy, RunWith(ctx, f, []string{"status", "-o", "json"}), pass)
				require.Contains(t, out.String(), fmt.Sprintf(`"id": "spore-%05d"`, n-1))
				require.Contains(t, errOut.String(), fmt.Sprintf("1 of %d spores need attention, 0 orphan(s)", n))

				res, err := f.Pass(st).Run(ctx, reconcile.Options{})
				require.NoError(t, err)
				var want bytes.Buffer
				require.NoError(t, writeWholeJSON(&want, statusList{Result: res.Result}))
				require.Equal(t, want.String(), out.String(), pass)
			}
			out.Reset()
			done, looked, err = o.stream(ctx, st)
			require.True(t, done, "a quiet fleet: the streamed pass")
			require.Nil(t, looked, "nothing for a whole pass to take")
			var unh *UnhealthyError
			require.ErrorAs(t, err, &unh)
			require.Contains(t, out.String(), `"id": "spore-00000"`)
		})
	}
}

// statusFactory is a factory of commands on the store at root, its
// output and its errors.
func statusFactory(root string) (*Factory, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	f := NewFactory(IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	f.Getenv = func(k string) string {
		if k == EnvStore {
			return root
		}
		return ""
	}
	f.Now = func() time.Time { return time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC) }
	return f, &out, &errOut
}

// breakerOpen opens id's circuit breaker in the store at root: it is
// Error, and needs attention.
func breakerOpen(t *testing.T, root, id string) {
	t.Helper()
	ctx := t.Context()
	st, err := dirstore.Open(ctx, root, dirstore.Options{})
	require.NoError(t, err)
	defer st.Close()
	require.NoError(t, st.Update(ctx, func(tx state.Tx) error {
		sp, err := tx.Spore(ctx, id)
		if err != nil {
			return err
		}
		sp.BreakerOpen = true
		return tx.PutStatus(ctx, id, sp.StatusAtWish())
	}))
}

// The streamed document's bytes are the whole document's: its spores
// encoded one by one into blocks (chunked) and written between the
// document's head and tail, for the fleets TestStatusJSONAsWholeDocument
// prints.
func TestStatusJSONStreamedAsWholeDocument(t *testing.T) {
	for _, n := range []int{1, 3, 101, 5*listBlock + 7} {
		for _, text := range []string{"text", "esc \x1b[2J bidi \u202e <&> \" \\ \u2028 \n", "\n  \"spores\": null"} {
			l := statusFleet(n, text)
			if n == 3 {
				l.Orphans = []string{"x", text}
			}
			var want, got bytes.Buffer
			require.NoError(t, writeWholeJSON(&want, l))
			var rows chunked
			var enc elemEncoder
			var row bytes.Buffer
			for i := range l.Spores {
				row.Reset()
				require.NoError(t, enc.add(&row, i == 0, &l.Spores[i]))
				rows.n++
				rows.Write(row.Bytes())
			}
			require.NoError(t, writeStreamed(&got, statusList{Result: reconcile.Result{Orphans: l.Orphans}}, &rows))
			require.Equal(t, want.String(), got.String(), "%d spores, %q", n, text)
		}
	}
}
