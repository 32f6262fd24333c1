package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
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
// against the whole document of the same pass's result.
func TestStatusJSONOfAStore(t *testing.T) {
	root := t.TempDir()
	buildFleet(t, root, 30)
	var out bytes.Buffer
	f := NewFactory(IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &bytes.Buffer{}})
	f.Getenv = func(k string) string {
		if k == EnvStore {
			return root
		}
		return ""
	}
	f.Now = func() time.Time { return time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC) }
	RunWith(t.Context(), f, []string{"status", "-o", "json"})
	require.Contains(t, out.String(), `"id": "spore-00029"`)

	st, err := f.Store(t.Context())
	require.NoError(t, err)
	defer st.Close()
	res, err := f.Pass(st).Run(t.Context(), reconcile.Options{})
	require.NoError(t, err)
	var want bytes.Buffer
	require.NoError(t, writeWholeJSON(&want, statusList{Result: res.Result}))
	require.Equal(t, want.String(), out.String())
}
