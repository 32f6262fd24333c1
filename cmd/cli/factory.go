package cli

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sporectl/sporectl/internal/quote"
	"github.com/sporectl/sporectl/mycelia"
	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
	"github.com/sporectl/sporectl/state/dirstore"
	"github.com/sporectl/sporectl/state/pgstore"
)

// EnvStore names the store when --store is not given.
const EnvStore = "SPORECTL_STORE"

// GlobalOptions are the flags every command accepts.
type GlobalOptions struct {
	Store      string
	Output     string
	NoHeaders  bool
	Verbose    int
	Kubeconfig string
	Context    string
	Namespace  string
}

// Factory hands commands their dependencies lazily, so that --help and
// completion never open a store or dial a cluster.
type Factory struct {
	IO      IOStreams
	Global  GlobalOptions
	Version string
	// Now is the clock; tests replace it.
	Now func() time.Time
	// Getenv reads the environment; tests replace it.
	Getenv func(string) string
	// Executable is the sporectl binary local bridges run (default: this
	// process's own executable).
	Executable string
	// NewRuntime builds the runtime the store's settings name (default:
	// the local or kube runtime); tests put a fake in its place.
	NewRuntime func(ctx context.Context, st state.Store, settings state.Settings) (reconcile.Runtime, error)
	// Dial reaches a bridge (default reconcile.DialHTTP).
	Dial reconcile.Dialer
	// WrapStore, when set, wraps every store the factory opens (tests
	// count a command's write transactions through it).
	WrapStore func(state.Store) state.Store

	// storeFlagSet: --store was given on the command line (maybe empty).
	storeFlagSet bool

	logOnce sync.Once
	logger  *slog.Logger
	// kubeWarned: the warning that the kube flags do nothing on this
	// store is given once per command, however many stores it opens.
	kubeWarned sync.Once
}

// NewFactory returns a factory over io and the real environment.
func NewFactory(io IOStreams) *Factory {
	return &Factory{IO: io, Version: version, Now: time.Now, Getenv: os.Getenv}
}

// Logger logs to stderr at a level set by -v.
func (f *Factory) Logger() *slog.Logger {
	f.logOnce.Do(func() {
		level := slog.LevelWarn
		switch {
		case f.Global.Verbose >= 2:
			level = slog.LevelDebug
		case f.Global.Verbose == 1:
			level = slog.LevelInfo
		}
		f.logger = slog.New(slog.NewTextHandler(f.IO.ErrOut, &slog.HandlerOptions{Level: level, ReplaceAttr: boundAttr}))
	})
	return f.logger
}

// boundAttr bounds a log line's text and errors as reportError bounds an
// error: a value given to the command (a path) may be any size.
func boundAttr(_ []string, a slog.Attr) slog.Attr {
	switch v := a.Value.Any().(type) {
	case string:
		if len(v) > quote.MaxRun {
			a.Value = slog.StringValue(quote.Message(v))
		}
	case error:
		if msg := v.Error(); len(msg) > quote.MaxRun {
			a.Value = slog.StringValue(quote.Message(msg))
		}
	}
	return a
}

// StoreLocation resolves --store, then $SPORECTL_STORE, then the default
// directory under the user's state home, and normalizes it once, here at
// the edge (ResolveLocation).
func (f *Factory) StoreLocation() (string, error) {
	if f.storeFlagSet && f.Global.Store == "" {
		return "", usageErrorf("--store is empty: give a directory or a postgres:// URL, or leave the flag out for $%s or the default", EnvStore)
	}
	if f.Global.Store != "" {
		return ResolveLocation(f.Global.Store, "--store")
	}
	if v := f.Getenv(EnvStore); v != "" {
		return ResolveLocation(v, "$"+EnvStore)
	}
	d, err := f.defaultStateDir()
	if err != nil {
		return "", err
	}
	return ResolveLocation(d, "the default store")
}

// ResolveLocation makes a store location what every later step can use
// as is: a PostgreSQL URL with its scheme in lower case (the scheme is
// case-insensitive, as in every URL; the driver is not), or an absolute
// directory path (a spore's home below it is handed to processes that
// start elsewhere). Any other "scheme://" is refused rather than taken as
// a directory name, since its text may hold credentials; errors name the
// scheme only, never the rest of the location.
func ResolveLocation(loc, where string) (string, error) {
	if scheme, rest, ok := strings.Cut(loc, "://"); ok && !strings.ContainsAny(scheme, `/\`) {
		switch strings.ToLower(scheme) {
		case "postgres", "postgresql":
			return strings.ToLower(scheme) + "://" + rest, nil
		}
		return "", usageErrorf("%s: unknown store scheme %s: give a directory or a postgres:// URL", where, quote.Value(scheme))
	}
	abs, err := filepath.Abs(loc)
	if err != nil {
		return "", usageErrorf("%s: cannot make the directory path absolute: %v", where, err)
	}
	return abs, nil
}

// defaultStateDir is sporectl's directory under the user's state home.
func (f *Factory) defaultStateDir() (string, error) {
	if v := f.Getenv("XDG_STATE_HOME"); v != "" {
		return filepath.Join(v, "sporectl"), nil
	}
	home := f.Getenv("HOME")
	if home == "" {
		return "", usageErrorf("no store given: pass --store or set %s ($HOME is not set either)", EnvStore)
	}
	return filepath.Join(home, ".local", "state", "sporectl"), nil
}

// Store opens the existing store. A location without one is ErrNoStore.
func (f *Factory) Store(ctx context.Context) (state.Store, error) {
	loc, err := f.StoreLocation()
	if err != nil {
		return nil, err
	}
	st, err := f.OpenStore(ctx, loc)
	if err == nil {
		f.warnKubeFlags(ctx, st)
	}
	return st, err
}

// kubeFlags are the global flags only the Kubernetes runtime reads, as
// given on this command line.
func (f *Factory) kubeFlags() []string {
	var given []string
	for _, fl := range []struct{ name, v string }{{"--kubeconfig", f.Global.Kubeconfig}, {"--context", f.Global.Context}, {"--namespace", f.Global.Namespace}} {
		if fl.v != "" {
			given = append(given, fl.name)
		}
	}
	return given
}

// warnKubeFlags warns on stderr, as the pod options' warning does, when
// a kube flag is given to a store whose runtime is not Kubernetes: they
// would be silently ignored. The settings are read only when one is
// given; a store that cannot be read says so through the command itself.
func (f *Factory) warnKubeFlags(ctx context.Context, st state.Store) {
	given := f.kubeFlags()
	if len(given) == 0 {
		return
	}
	f.kubeWarned.Do(func() {
		s, err := state.ViewValue(ctx, st, func(tx state.Tx) (state.Settings, error) { return tx.Settings(ctx) })
		if err != nil || s.Runtime == "kube" {
			return
		}
		fmt.Fprintln(f.IO.ErrOut, kubeFlagsWarning(given))
	})
}

// kubeFlagsWarning is podWarning's sibling, for the global kube flags.
func kubeFlagsWarning(flags []string) string {
	return fmt.Sprintf("warning: the local runtime ignores %s (Kubernetes flags): this store's spores run on this machine, and the flags apply once the store runs on Kubernetes (sporectl init --runtime kube)", strings.Join(flags, ", "))
}

// OpenStore opens the store at loc: a postgres:// URL or a directory.
func (f *Factory) OpenStore(ctx context.Context, loc string) (state.Store, error) {
	var st state.Store
	var err error
	if isPostgres(loc) {
		st, err = pgstore.Open(ctx, loc, pgstore.Options{Logger: f.Logger()})
	} else {
		st, err = dirstore.Open(ctx, loc, dirstore.Options{Logger: f.Logger()})
	}
	if err != nil || f.WrapStore == nil {
		return st, err
	}
	return f.WrapStore(st), nil
}

// InitStore creates the store, or opens and upgrades an existing one.
func (f *Factory) InitStore(ctx context.Context, settings state.Settings) (state.Store, bool, error) {
	loc, err := f.StoreLocation()
	if err != nil {
		return nil, false, err
	}
	return f.InitStoreAt(ctx, loc, settings)
}

// InitStoreAt is InitStore for an explicit location.
func (f *Factory) InitStoreAt(ctx context.Context, loc string, settings state.Settings) (state.Store, bool, error) {
	if isPostgres(loc) {
		return pgstore.Init(ctx, loc, settings, pgstore.Options{Logger: f.Logger()})
	}
	return dirstore.Init(ctx, loc, settings, dirstore.Options{Logger: f.Logger()})
}

// Pass is the reconcile pass over st with this factory's runtime, bridge
// dialer, clock and logger. A spore it starts is told who it is by
// mycelia.Identity: the text lists the pod-facing API's commands, so it is
// composed here, above both the pass and the runtimes.
func (f *Factory) Pass(st state.Store) *reconcile.Pass {
	return &reconcile.Pass{
		Store: st,
		Runtime: func(ctx context.Context, settings state.Settings) (reconcile.Runtime, error) {
			return f.RuntimeFor(ctx, st, settings)
		},
		Identity: mycelia.Identity,
		Dial:     f.Dial,
		Now:      f.Now,
		Logger:   f.Logger(),
	}
}

// isPostgres reports whether loc, as ResolveLocation returns it, is a
// PostgreSQL URL.
func isPostgres(loc string) bool {
	return strings.HasPrefix(loc, "postgres://") || strings.HasPrefix(loc, "postgresql://")
}
