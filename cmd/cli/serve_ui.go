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
// graceful stop is not held up. On loopback without operator tokens the
// prompt box sends as this machine's user, as `sporectl prompt` would.
func (o *serveOptions) withUI(ctx context.Context, api http.Handler, st state.Store) http.Handler {
	page := &ui.Handler{Store: st, Pass: o.f.Pass(st), Now: o.f.Now, Logger: o.f.Logger(), Shutdown: ctx,
		LocalSender: "user:" + userName(o.f.Getenv), FollowEvery: o.FollowWatched}
	if o.FollowWatched <= 0 {
		page.FollowEvery = -1 // the flag's 0: never
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ui" || strings.HasPrefix(r.URL.Path, ui.Prefix) {
			page.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}
