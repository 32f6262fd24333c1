package dirstore

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// unsweptFile, in events/, says that a writer may have left an event log
// no committed row names (format §4): it is made before a transaction
// creates a log or deletes a spore, and removed once the writer knows
// none is left. So a writer lists events/ (the sweep, one entry per
// spore) only when the file is there — after a crash, a failed
// transaction or a removal that failed — not on every handle's first
// commit.
const unsweptFile = ".unswept"

// unsweptExists says whether the marker is there.
func (s *Store) unsweptExists() (bool, error) {
	_, err := os.Lstat(s.path(eventsDir, unsweptFile))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// markUnswept makes the marker before a log is created or removed. With
// durable, events/ is fsynced too, so that the marker survives a power
// cut that the commit after it survives (a delete's log is removed only
// after the commit point); a created log is made durable by the commit's
// own fsync of events/, which carries the marker with it.
func (s *Store) markUnswept(durable bool) error {
	p := s.path(eventsDir, unsweptFile)
	f, err := os.OpenFile(p, os.O_RDONLY|os.O_CREATE|noFollow, 0o600)
	if errors.Is(err, syscall.ELOOP) {
		return symlinkErr(eventsDir + "/" + unsweptFile)
	}
	if err != nil {
		return ioErr("commit", err)
	}
	f.Close()
	if durable {
		if err := syncDir(s.path(eventsDir)); err != nil {
			return ioErr("commit", err)
		}
	}
	return nil
}

// clearUnswept removes the marker once no unnamed log is left. Not
// fsynced: a removal lost to a crash costs the next writer a sweep.
func (s *Store) clearUnswept() {
	if err := os.Remove(s.path(eventsDir, unsweptFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.opts.Logger.Warn("could not remove the store's sweep marker; the next writer sweeps again", "err", err)
	}
}
