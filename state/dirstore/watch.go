package dirstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sporectl/sporectl/state"
)

// watchPoll is how often Watch re-reads the heads when inotify is not
// available (a filesystem without it, or the process's inotify limit
// reached): a cheap read, since an unchanged store is a few stats.
const watchPoll = 50 * time.Millisecond

// Watch sends the id of each spore whose log grew (or that was deleted)
// until ctx ends, then closes the channel: the page's live tails wait on
// it instead of polling (mycelia/ui.Changes).
//
// Every transaction, in whatever process, commits by writing its line to
// the commit log in the store's root (format §5), and a compaction
// creates the next commit log there, so one inotify watch of the root
// directory sees every commit (the event logs, in events/, are written
// before the commit and are not watched). On a change Watch reads every
// spore's head — the rows only, never a log — and sends the ids whose
// last seq moved. Without inotify it reads the heads every watchPoll.
// A burst of commits may be sent as one change per spore.
func (s *Store) Watch(ctx context.Context) (<-chan string, error) {
	heads, err := s.heads(ctx)
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", s.root, err)
	}
	var tick <-chan time.Time // set when polling instead
	changed, stop, err := s.inotify()
	if err != nil {
		s.opts.Logger.Warn("dir store: cannot watch the commit log with inotify; polling it", "every", watchPoll, "err", err)
		t := time.NewTicker(watchPoll)
		tick, stop = t.C, t.Stop
	}
	out := make(chan string, 64)
	go func() {
		defer close(out)
		defer stop()
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-changed:
				if !ok {
					return // inotify failed (logged); the caller watches again
				}
			case <-tick:
			}
			now, err := s.heads(ctx)
			if err != nil {
				if ctx.Err() == nil {
					s.opts.Logger.Warn("dir store: watch could not read the heads", "err", err)
				}
				continue
			}
			for _, id := range diffHeads(heads, now) {
				select {
				case out <- id:
				case <-ctx.Done():
					return
				}
			}
			heads = now
		}
	}()
	return out, nil
}

func (s *Store) heads(ctx context.Context) (map[string]state.SporeHead, error) {
	h, err := state.ViewValue(ctx, s, func(tx state.Tx) (map[string]state.SporeHead, error) { return tx.Heads(ctx) })
	return h, err
}

// diffHeads lists the spores whose last seq differs, or that are gone,
// sorted.
func diffHeads(before, after map[string]state.SporeHead) []string {
	var ids []string
	for id, h := range after {
		if b, ok := before[id]; !ok || b.LastSeq != h.LastSeq {
			ids = append(ids, id)
		}
	}
	for id := range before {
		if _, ok := after[id]; !ok {
			ids = append(ids, id)
		}
	}
	return ids
}

// inotifyInit is unix.InotifyInit1; tests make it fail to exercise the
// polling fallback.
var inotifyInit = unix.InotifyInit1

// inotify watches the root directory for writes to and creation of its
// files; it sends on changed after each batch of events that names the
// commit log or the snapshot.
func (s *Store) inotify() (changed <-chan struct{}, stop func(), err error) {
	fd, err := inotifyInit(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, nil, fmt.Errorf("inotify_init1: %w", err)
	}
	if _, err := unix.InotifyAddWatch(fd, s.root, unix.IN_MODIFY|unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_ONLYDIR); err != nil {
		unix.Close(fd)
		return nil, nil, fmt.Errorf("inotify_add_watch %s: %w", s.root, err)
	}
	// A non-blocking descriptor goes to the runtime's poller, so Close
	// ends a Read that waits.
	f := os.NewFile(uintptr(fd), "inotify")
	ch := make(chan struct{}, 1)
	go func() {
		defer close(ch)
		buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
		for {
			n, err := f.Read(buf)
			if err != nil {
				if !errors.Is(err, os.ErrClosed) {
					s.opts.Logger.Warn("dir store: inotify read failed", "err", err)
				}
				return
			}
			if relevant(buf[:n]) {
				select {
				case ch <- struct{}{}:
				default: // a change is already pending
				}
			}
		}
	}()
	return ch, func() { _ = f.Close() }, nil
}

// relevant reports whether a batch of inotify events names the commit
// log or the snapshot (or overflowed, so it may have).
func relevant(b []byte) bool {
	for len(b) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
		end := unix.SizeofInotifyEvent + int(ev.Len)
		if ev.Mask&unix.IN_Q_OVERFLOW != 0 || end > len(b) {
			return true
		}
		name := strings.TrimRight(string(b[unix.SizeofInotifyEvent:end]), "\x00")
		if strings.HasPrefix(name, txlogPrefix) || name == snapshotFile {
			return true
		}
		b = b[end:]
	}
	return false
}
