package cli

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/internal/quote"
	"github.com/sporectl/sporectl/mycelia"
	"github.com/sporectl/sporectl/mycelia/auth"
	"github.com/sporectl/sporectl/mycelia/ui"
	"github.com/sporectl/sporectl/reconcile/metrics"
	"github.com/sporectl/sporectl/state"
)

type serveOptions struct {
	f              *Factory
	Addr           string
	TLSCert        string
	TLSKey         string
	InsecureListen bool
	// FollowWatched is how often the page takes in the lines of a spore
	// watched live (0: never). FollowWoken is how long a message that
	// woke its target is kept trying in the background after the answer.
	FollowWatched time.Duration
	FollowWoken   time.Duration
	// FleetShare is how long one fleet read (a read-only pass over the
	// whole fleet) serves the fleet pages and the GET /api/spores lists
	// asked after it (0: only those asked while it runs).
	FleetShare time.Duration
	// RateLimit is how many messages one spore may send a minute.
	RateLimit int
	// AddressCheck, AddressModel and AddressTimeout choose the check of
	// a tell's address (mycelia.NewAddressCheck).
	AddressCheck   string
	AddressModel   string
	AddressTimeout time.Duration
	// Model is the model gateway's upstream and key (serve_model.go).
	Model modelOptions
	// ReconcileEvery, when more than 0, runs reconcile's loop in this
	// process (serve_loop.go).
	ReconcileEvery time.Duration

	// proc is this process's counters (reconcile/metrics), set by run:
	// the API's, the page's and /metrics' passes count into it.
	proc *metrics.Process
}

// newCmdServe builds the command; runF, when not nil, is called instead
// of the run function (tests check flag parsing with it).
func newCmdServe(f *Factory, runF func(context.Context, *serveOptions) error) *cobra.Command {
	o := &serveOptions{f: f}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the operators' page (/ui/) and the API spores call: summons, tell, spores, swarm messages",
		Long: `Serve the operators' page and the mycelia API on one address.

The page is at /ui/ (http://` + defaultServeAddr + `/ui/ by default; GET / redirects a
browser there): the fleet, each spore's conversation, live, and a box to prompt
a spore (see "The page" in the docs). Every page needs an operator's login, loopback included:
log in with the token 'sporectl init' or 'sporectl token create --operator NAME'
printed. serve's first line names the page's address, and says so when the
store has no operator token yet.

GET /metrics answers Prometheus (see "Metrics" in the docs) for a scrape that presents an
operator's token as "Authorization: Bearer <token>", loopback included: the
fleet's families from a read-only pass per scrape, and this process's counters
(messages sent, refused, delivered, pass durations), which start at zero when
serve restarts.

Under /model/ it answers the model's API for the spores (see "The model gateway" in the docs): each
call, made with the spore's own token, is judged (its desired state, its and
its colony's daily budget, its rate of calls), forwarded to --model-upstream
with the model's key, which only serve holds (--model-key-file, else
$ANTHROPIC_API_KEY), and its usage counted into the store before the answer
is passed on.

The mycelia API is the only endpoint spore pods reach (see "Mycologists and swarms" in the docs). Callers authenticate
with their spore id and token; rank and reach come from the store. Every
accepted message is committed to the store before the answer, then delivered at
once when its target is awake (otherwise by the next reconcile). Nothing is kept
in this process but its metrics' counters: any number of serve processes may
answer for one store.

Plain HTTP is served only on a loopback address, unless --insecure-listen is
given (for a cluster network that is itself trusted, e.g. behind a
NetworkPolicy); with --tls-cert and --tls-key it serves HTTPS on any address.
--reconcile-every D runs reconcile's loop in this process too (a pass every D,
as 'sporectl reconcile --every D'), so one process runs the whole colony; it
stops with serve, after the pass in flight.

An --addr serve could never listen on (a port above 65535, not host:port) is
exit 2 before it tries. On the local runtime serve warns when the store's
api-url, which spores are told, does not reach the address it listens on.

SIGINT or SIGTERM stops it gracefully.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.run(cmd.Context())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Addr, "addr", defaultServeAddr, "address to listen on (host:port)")
	fl.StringVar(&o.TLSCert, "tls-cert", "", "PEM certificate file: serve HTTPS (needs --tls-key)")
	fl.StringVar(&o.TLSKey, "tls-key", "", "PEM private key file of --tls-cert")
	fl.BoolVar(&o.InsecureListen, "insecure-listen", false, "serve plain HTTP on an address that is not loopback")
	fl.IntVar(&o.RateLimit, "rate-limit", 60, "messages one spore may send in any minute, counted from the store across every serve (0: no limit)")
	fl.StringVar(&o.AddressCheck, "address-check", mycelia.AddressCheckAuto, "how a tell's address is checked: auto (a small model when serve has the model's key, else the fallback) or fallback (names of spores in the message)")
	fl.StringVar(&o.AddressModel, "address-model", "", "the model of the address check (default $SPORECTL_ADDRESS_MODEL, else "+mycelia.DefaultAddressModel+"), at --model-upstream")
	fl.DurationVar(&o.AddressTimeout, "address-timeout", mycelia.DefaultAddressTimeout, "how long the address check waits for the model; then the fallback decides")
	fl.DurationVar(&o.FollowWatched, "follow-watched", ui.DefaultFollowEvery, "how often the page takes in the new lines of a spore someone watches live (0: leave it to reconcile)")
	fl.DurationVar(&o.FleetShare, "fleet-share", ui.DefaultFleetShare, "how long one read of the whole fleet serves the fleet pages, the mycologist spores lists and the address check's candidates asked after it: their answers may be that old (0: only those asked while a read runs share it)")
	fl.StringVar(&o.Model.Upstream, "model-upstream", "", "the model API the gateway under /model/ forwards the spores' calls to, with serve's key (default $ANTHROPIC_BASE_URL, else "+mycelia.DefaultAnthropicURL+"); the address check calls it too")
	fl.StringVar(&o.Model.KeyFile, "model-key-file", "", "file holding the model API's key, which only serve holds (default $ANTHROPIC_API_KEY)")
	fl.DurationVar(&o.FollowWoken, "follow-woken", 2*time.Minute, "how long to keep delivering, after answering, a message whose target it woke (0: leave it to reconcile)")
	fl.DurationVar(&o.ReconcileEvery, "reconcile-every", 0, "run reconcile's pass in this process at this interval (plus up to 10% jitter), e.g. 30s (0: leave it to cron or 'reconcile --every')")
	return cmd
}

func (o *serveOptions) validate() error {
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return usageErrorf("--tls-cert and --tls-key go together")
	}
	host, err := checkListenAddr(o.Addr)
	if err != nil {
		return err
	}
	if o.TLSCert == "" && !o.InsecureListen && !isLoopback(host) {
		return usageErrorf("--addr %s is not a loopback address: serve HTTPS there (--tls-cert, --tls-key) or pass --insecure-listen", o.Addr)
	}
	if o.RateLimit < 0 {
		return usageErrorf("invalid value %d for --rate-limit: must be 0 or more", o.RateLimit)
	}
	if o.AddressCheck != mycelia.AddressCheckAuto && o.AddressCheck != mycelia.AddressCheckName {
		return usageErrorf("invalid value %s for --address-check: auto or fallback", quote.Value(o.AddressCheck))
	}
	if o.AddressTimeout <= 0 {
		return usageErrorf("invalid value %s for --address-timeout: must be more than 0", o.AddressTimeout)
	}
	if o.FleetShare < 0 {
		return usageErrorf("invalid value %s for --fleet-share: must be 0 or more", o.FleetShare)
	}
	if o.FollowWoken < 0 {
		return usageErrorf("invalid value %s for --follow-woken: must be 0 or more", o.FollowWoken)
	}
	if o.ReconcileEvery < 0 {
		return usageErrorf("invalid value %s for --reconcile-every: must be 0 (no loop) or more, e.g. 30s", o.ReconcileEvery)
	}
	return o.Model.validate(o.f.Getenv)
}

// isLoopback: "localhost" in any letter case (host names are not case
// sensitive) or a loopback IP; "" (every interface) is not.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ListenError is a listen that failed: the address is taken, or not
// permitted. Its message names the address once (net's own error names
// it again).
type ListenError struct {
	Addr string
	Err  error
}

func (e *ListenError) Error() string {
	return "serve could not listen on " + e.Addr + ": " + e.Err.Error()
}
func (e *ListenError) Unwrap() error { return e.Err }

func listenError(addr string, err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		err = op.Err // "bind: address already in use", without the address
	}
	return &ListenError{Addr: addr, Err: err}
}

// noOperator reports whether the store has no operator token, so that
// nobody can log in to the page yet. A store that cannot be read now is
// not a reason not to serve: the page answers 503 until it can be.
func noOperator(ctx context.Context, st state.Store, log *slog.Logger) bool {
	s, err := state.ViewValue(ctx, st, func(tx state.Tx) (state.Settings, error) { return tx.Settings(ctx) })
	if err != nil {
		log.Warn("serve: could not read the operator tokens", "err", err)
		return false
	}
	return len(s.OperatorTokens()) == 0
}

// newAPI is the mycelia API over st, counting into this process's
// metrics (made here, for the page's and /metrics' passes too).
func (o *serveOptions) newAPI(ctx context.Context, st state.Store, check mycelia.AddressCheck) *mycelia.Server {
	o.proc = metrics.NewProcess()
	o.proc.Now = o.f.Now
	// One authenticator for the API, the page and /metrics (serve_ui.go).
	authn := &auth.Authenticator{Store: st, Now: o.f.Now}
	return &mycelia.Server{Store: st, Auth: authn, Pass: o.pass(st), Now: o.f.Now, Logger: o.f.Logger(), Background: ctx, FollowWoken: o.FollowWoken,
		RateLimit: o.RateLimit, AddressCheck: check, Metrics: o.proc, SporesShare: o.fleetShare()}
}

// fleetShare is --fleet-share as the page and the API take it: their 0
// is the default, so the flag's 0 (share only while a read runs) is
// negative there.
func (o *serveOptions) fleetShare() time.Duration {
	if o.FleetShare <= 0 {
		return -1
	}
	return o.FleetShare
}

func (o *serveOptions) run(ctx context.Context) error {
	var certs []tls.Certificate
	if o.TLSCert != "" {
		c, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey)
		if err != nil {
			return fmt.Errorf("load --tls-cert and --tls-key: %w", err)
		}
		certs = []tls.Certificate{c}
	}
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	log := o.f.Logger()
	check, checkName, err := mycelia.NewAddressCheck(o.Model.getenv(o.f.Getenv), o.AddressCheck, o.AddressModel, o.AddressTimeout)
	if err != nil {
		return usageErrorf("%v", err)
	}
	api := o.newAPI(ctx, st, check)
	hs := &http.Server{
		Handler:           o.handler(ctx, api, st), // one mux: the API and the page (serve_ui.go)
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		// A request in flight at SIGTERM finishes (Shutdown waits for it).
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return listenError(o.Addr, err)
	}
	scheme := "http"
	if certs != nil {
		scheme = "https"
		hs.TLSConfig = &tls.Config{Certificates: certs, MinVersion: tls.VersionTLS12}
		ln = tls.NewListener(ln, hs.TLSConfig)
	}
	// The page's address first: it is what a person opens.
	page := fmt.Sprintf("serving the page on %s://%s%s", scheme, ln.Addr(), ui.Prefix)
	if noOperator(ctx, st, log) {
		page += ": " + ui.NoOperatorText
	}
	fmt.Fprintln(o.f.IO.ErrOut, page)
	fmt.Fprintf(o.f.IO.ErrOut, "serving the mycelia API on %s://%s (address check: %s)\n", scheme, ln.Addr(), checkName)
	fmt.Fprintln(o.f.IO.ErrOut, o.Model.line(scheme+"://"+ln.Addr().String()))
	o.warnAPIURL(ctx, st, ln.Addr(), certs != nil)
	looped := o.startLoop(ctx, st)
	// The pass in flight finishes before the store is closed.
	defer looped()
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	// Requests in flight finish (their messages are committed first
	// anyway); background deliveries end with ctx.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err = hs.Shutdown(sctx)
	api.Wait()
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	if err != nil {
		return fmt.Errorf("stop serving: %w", err)
	}
	return nil
}
