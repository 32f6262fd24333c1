package cli

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// TestReconcileActionLines: a spore restarted by this pass is reported
// without a "next respawn" time (nothing is held back); one whose respawn
// waits for its backoff says until when, in UTC.
func TestReconcileActionLines(t *testing.T) {
	at := time.Date(2026, 11, 1, 12, 0, 5, 0, time.FixedZone("CET", 3600))
	plan := func(mod func(p *reconcile.SporePlan)) *reconcile.SporePlan {
		p := &reconcile.SporePlan{Spore: state.Spore{Wish: state.Wish{ID: "w1"}}, Verdict: reconcile.Verdict{Text: "bridge exited"}}
		mod(p)
		return p
	}
	cases := []struct {
		name string
		plan *reconcile.SporePlan
		want passAction
	}{
		{"restarted", plan(func(p *reconcile.SporePlan) { p.Start, p.Crash, p.NotBefore = true, true, at }),
			passAction{Spore: "w1", Action: "restart", Detail: "after bridge exited"}},
		{"restart failed", plan(func(p *reconcile.SporePlan) {
			p.Start, p.Crash, p.NotBefore, p.StartErr = true, true, at, errors.New("no claude")
		}), passAction{Spore: "w1", Action: "restart", Detail: "after bridge exited — failed: no claude", Error: "no claude"}},
		{"held back", plan(func(p *reconcile.SporePlan) { p.Due = at }),
			passAction{Spore: "w1", Action: "wait", Detail: "backing off; next respawn at 11:00:05Z"}},
		{"first start", plan(func(p *reconcile.SporePlan) { p.Start = true }),
			passAction{Spore: "w1", Action: "start", Detail: "desired Running, nothing running"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, []passAction{c.want}, actionsOf([]*reconcile.SporePlan{c.plan}, false))
		})
	}
}
