package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/sporectl/sporectl/mycelia/auth"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

// call is what the gateway knows of one call it let through: who made
// it, for the count and the metrics.
type call struct {
	sent   time.Time // when it went upstream, on the process's clock
	spore  string
	colony string
}

type callKey struct{}

func withCall(ctx context.Context, c *call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

func callOf(ctx context.Context) *call {
	c, _ := ctx.Value(callKey{}).(*call)
	return c
}

// admit judges r before anything of it goes upstream: the caller's key,
// its desired state, its budgets and its rate, in that order (a refused
// call takes nothing of the rate). It fills c with who called.
func (g *Gateway) admit(r *http.Request, c *call) (refusal, bool) {
	ctx := r.Context()
	who, err := g.cfg.Auth.Who(ctx, r, auth.Want{Kind: auth.SporeModelKey})
	switch {
	case errors.Is(err, auth.ErrUnauthorized):
		return refusal{http.StatusUnauthorized, errAuthentication, "the model gateway takes a spore's own key: ID:TOKEN as x-api-key (sporectl sets ANTHROPIC_API_KEY so)", 0}, false
	case err != nil:
		g.cfg.Logger.Warn("model gateway: could not read the calling spore", "err", err)
		return refusal{http.StatusServiceUnavailable, errAPI, "the model gateway cannot read the store now", 0}, false
	}
	sp := who.Spore
	c.spore, c.colony = sp.ID, sp.Colony
	if sp.Desired != state.Running {
		return refusal{http.StatusForbidden, errPermission, fmt.Sprintf("spore %s is %s: it may not call the model", sp.ID, desiredWord(sp.Desired)), 0}, false
	}
	if g.cfg.Key == "" {
		return refusal{http.StatusServiceUnavailable, errAPI, "serve holds no model key (serve --model-key-file, or ANTHROPIC_API_KEY in serve's environment)", 0}, false
	}
	f, err := g.fleet.Get(ctx, g.cfg.FleetShare, g.readFleet)
	if err != nil {
		g.cfg.Logger.Warn("model gateway: could not read the fleet for the budgets", "err", err)
		return refusal{http.StatusServiceUnavailable, errAPI, "the model gateway cannot read the store now", 0}, false
	}
	if !f.settings.Gateway() {
		// Direct mode: spores hold the key and their spend is their own
		// report, so a call here would be counted where nothing judges it.
		return refusal{http.StatusForbidden, errPermission, "the store's model gateway is off (model_gateway: off): its spores call the model directly; sporectl init --model-gateway on turns it on", 0}, false
	}
	now := g.cfg.Now()
	if over, text := overBudget(sp, f, now); over {
		return refusal{http.StatusForbidden, errPermission, text, 0}, false
	}
	if wait, ok := g.rate.take(sp.ID, f.settings.ModelCallRate(), now); !ok {
		secs := int((wait + time.Second - 1) / time.Second)
		return refusal{http.StatusTooManyRequests, errRateLimit, fmt.Sprintf("spore %s made %d model calls in a minute, its limit (model_calls_per_minute)", sp.ID, f.settings.ModelCallRate()), max(secs, 1)}, false
	}
	return refusal{}, true
}

func desiredWord(d state.Desired) string {
	switch d {
	case state.Paused:
		return "asleep"
	case state.Stopped:
		return "stopped"
	}
	return string(d)
}

// fleet is one read of the settings and every spore, shared by the calls
// of SharedFleetAge for their colony's spend.
type fleet struct {
	settings state.Settings
	spores   []state.Spore
}

func (g *Gateway) readFleet(ctx context.Context) (fleet, error) {
	var f fleet
	err := g.cfg.Store.View(ctx, func(tx state.Tx) error {
		var err error
		if f.settings, err = tx.Settings(ctx); err != nil {
			return err
		}
		f.spores, err = tx.Spores(ctx)
		// A damaged spore's spend is not known; the others' still is.
		if _, damaged := errors.AsType[*state.DamagedError](err); damaged {
			err = nil
		}
		return err
	})
	if err != nil {
		return fleet{}, fmt.Errorf("read the fleet for the model budgets: %w", err)
	}
	return f, nil
}

// overBudget judges sp (as the caller's key read it, the freshest) on
// what the gateway counted today: its own spend, and its colony's summed
// over the shared read with sp's own record in place of the read's; and
// in words why ("spore w1 is over its budget: 24/20 tokens today").
func overBudget(sp state.Spore, f fleet, now time.Time) (bool, string) {
	colonyBudget := f.settings.Colony(sp.Colony).Budget
	if sp.Budget.IsZero() && colonyBudget.IsZero() {
		return false, ""
	}
	own := policy.CountedSpend(sp, now)
	var colony state.Spend
	if !colonyBudget.IsZero() {
		colony = own
		for i := range f.spores {
			if o := &f.spores[i]; o.Colony == sp.Colony && o.ID != sp.ID {
				colony = colony.Add(policy.CountedSpend(*o, now))
			}
		}
	}
	over, ofColony, text := policy.Over(sp, own, colonyBudget, colony)
	switch {
	case !over, policy.Granted(sp, now):
		// Within budget, or working on a person's over-budget prompt.
		return false, ""
	case ofColony:
		return true, fmt.Sprintf("spore %s is over its colony's budget: %s", sp.ID, text)
	}
	return true, fmt.Sprintf("spore %s is over its budget: %s", sp.ID, text)
}
