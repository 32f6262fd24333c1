package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sporectl/sporectl/reconcile/transcript"
	"github.com/sporectl/sporectl/state"
)

// DefaultWatchInterval is how often `status -w` and `events -w` observe
// reality when the store says nothing changed: pods, processes and
// bridges do not notify the store, so a watch also looks at them every
// interval.
const DefaultWatchInterval = 2 * time.Second

// minWatchInterval keeps a watch from turning into a busy loop of passes.
const minWatchInterval = 100 * time.Millisecond

// checkWatchInterval is --watch-interval's rule.
func checkWatchInterval(d time.Duration) error {
	if d < minWatchInterval {
		return usageErrorf("invalid value %s for --watch-interval: must be at least %s", d, minWatchInterval)
	}
	return nil
}

// changeSource is a store that can say when a spore's log may have grown
// (both backends: the directory store watches its commit log, PostgreSQL
// listens for its notifications). Consumed here and by the page
// (mycelia/ui.Changes has the same method).
type changeSource interface {
	Watch(ctx context.Context) (<-chan string, error)
}

// storeChanges returns st's change notices, or nil when st has none (a
// watch then observes every interval only). A failed Watch is not an
// error: the interval still drives the watch.
func storeChanges(ctx context.Context, f *Factory, st state.Store) <-chan string {
	src, ok := st.(changeSource)
	if !ok {
		return nil
	}
	ch, err := src.Watch(ctx)
	if err != nil {
		f.Logger().Warn("cannot watch the store for changes; observing every interval only", "err", err)
		return nil
	}
	return ch
}

// waiter waits for the next reason to look again: a change notice from
// the store for one of ids (any id when ids is empty; "" from the store
// means it cannot tell which), the end of bridge (a long poll of a
// bridge, when not nil) or the interval, whichever comes first.
type waiter struct {
	changes  <-chan string
	ids      map[string]bool
	interval time.Duration
	bridge   func(ctx context.Context)
}

func (w *waiter) wait(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(ctx, w.interval)
	defer cancel()
	if w.bridge != nil {
		go func() {
			w.bridge(wctx)
			cancel()
		}()
	}
	for {
		select {
		case <-wctx.Done():
			return ctx.Err()
		case id, ok := <-w.changes:
			if !ok {
				w.changes = nil // the store's watch ended: the interval goes on
				continue
			}
			if len(w.ids) == 0 || id == "" || w.ids[id] {
				return nil
			}
		}
	}
}

// endedByInterrupt is the error a watch returns: Ctrl-C (the context
// canceled by the signal) is how a watch ends, quietly and with exit 0,
// as kubectl's -w does, whatever the step it interrupted then said
// (a pass or a read cut short).
func endedByInterrupt(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// streamPrinter prints what a watch finds through the one printer's rules:
// the first table with its header, later rows in the same columns
// without it (a column grows when a later cell is wider); -o json one
// compact document per line (JSON lines); -o yaml one document each,
// after "---"; -o name the names.
type streamPrinter struct {
	f      *Factory
	widths []int
	wrote  bool
}

func (p *streamPrinter) print(v Printable) error {
	switch p.f.Global.Output {
	case "json":
		return p.f.PrintLine(v)
	case "yaml":
		if _, err := io.WriteString(p.f.IO.Out, "---\n"); err != nil {
			return err
		}
		return p.f.Print(v)
	case "name":
		return p.f.Print(v)
	}
	header, rows := v.Table(p.f.Global.Output == "wide")
	var lines [][]string
	if !p.wrote && !p.f.Global.NoHeaders && header != nil {
		lines = append(lines, header)
	}
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = transcript.Sanitize(c)
		}
		lines = append(lines, cells)
	}
	p.wrote = true
	for _, l := range lines {
		for i, c := range l {
			if i >= len(p.widths) {
				p.widths = append(p.widths, 0)
			}
			p.widths[i] = max(p.widths[i], len([]rune(c)))
		}
	}
	var b strings.Builder
	for _, l := range lines {
		for i, c := range l {
			if i == len(l)-1 {
				b.WriteString(c)
				break
			}
			fmt.Fprintf(&b, "%-*s", p.widths[i]+3, c)
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(p.f.IO.Out, b.String())
	return err
}
