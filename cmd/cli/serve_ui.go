package cli

import (
	"context"
	"net/http"

	"github.com/sporectl/sporectl/mycelia"
	"github.com/sporectl/sporectl/mycelia/ui"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/metrics"
	"github.com/sporectl/sporectl/state"
)

// handler is serve's one ServeMux: the API's routes (mycelia), the
// operators' page (docs/page.md) under /ui/, the model gateway under
// /model/ (mycelia/gateway, a spore's model key), GET /metrics for Prometheus
// (reconcile/metrics, an operator's bearer token), and GET / redirected to
// the page. The three ask one authenticator (mycelia/auth, the API's) who
// a request is, each for the one kind of credential it takes. The page reads the same store with its own pass, the one `sporectl
// prompt` builds (it observes read-only, and delivers the prompt box's
// prompts as prompt does). Live tails end when ctx does (SIGTERM), so a
// graceful stop is not held up. Every page needs an operator's session.
// Every other path, and any other method on /, is the API's (its 404;
// none of its routes is /), as is a path that is not canonical outside
// the page's.
func (o *serveOptions) handler(ctx context.Context, api *mycelia.Server, st state.Store) http.Handler {
	page := &ui.Handler{Store: st, Auth: api.Auth, Pass: o.pass(st), Now: o.f.Now, Logger: o.f.Logger(), Shutdown: ctx,
		FollowEvery: o.FollowWatched, FleetShare: o.fleetShare()}
	if o.FollowWatched <= 0 {
		page.FollowEvery = -1 // the flag's 0: never
	}
	m := http.NewServeMux()
	api.Register(m)
	page.Register(m)
	o.gateway(st, api.Auth).Register(m)
	// Its own pattern, not an API row: the rows are the pods' API (spore
	// tokens, ranks), and /metrics is an operator's, as the page is.
	mh := metrics.NewHandler(st, o.pass(st), o.proc)
	mh.Auth, mh.Now, mh.Logger = api.Auth, o.f.Now, o.f.Logger()
	m.Handle("GET "+metrics.Path, mh)
	m.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, ui.Prefix, http.StatusFound)
	})
	return api.Canonical(m, ui.Prefix)
}

// pass is the factory's pass, counted into this process's metrics once
// run has made them.
func (o *serveOptions) pass(st state.Store) *reconcile.Pass {
	ps := o.f.Pass(st)
	if o.proc != nil {
		ps.Finished = o.proc.PassFinished
	}
	return ps
}
