package cli

import (
	"context"
	"net/http"
	"strings"

	"github.com/sporectl/sporectl/mycelia/ui"
	"github.com/sporectl/sporectl/state"
)

// withUI serves the operators' page (docs/page.md) under /ui/ next to the
// API: the page over the same store, with its own pass, the one `sporectl
// prompt` builds (it observes read-only, and delivers the prompt box's
// prompts as prompt does). Live tails end when ctx does (SIGTERM), so a
// graceful stop is not held up. Every page needs an operator's session.
// A browser sent to serve's bare address (GET / exactly) is redirected to
// the page; every other path, and any other method on /, goes to the API
// as before (none of its routes is /).
func (o *serveOptions) withUI(ctx context.Context, api http.Handler, st state.Store) http.Handler {
	page := &ui.Handler{Store: st, Pass: o.f.Pass(st), Now: o.f.Now, Logger: o.f.Logger(), Shutdown: ctx,
		FollowEvery: o.FollowWatched}
	if o.FollowWatched <= 0 {
		page.FollowEvery = -1 // the flag's 0: never
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
			http.Redirect(w, r, ui.Prefix, http.StatusFound)
		case r.URL.Path == "/ui" || strings.HasPrefix(r.URL.Path, ui.Prefix):
			page.ServeHTTP(w, r)
		default:
			api.ServeHTTP(w, r)
		}
	})
}
