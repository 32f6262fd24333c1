package dirstore

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/google/renameio/v2"

	"github.com/sporectl/sporectl/state"
)

// upgrade brings the store at root from an older format to formatVersion
// in place (format §10), holding the write lock throughout:
//  1. read the state, accepting a snapshot of any format from oldestFormat
//     up (an upgrade that died after step 3 leaves a new snapshot under
//     the old FORMAT);
//  2. save and drop a torn commit tail and remove stale commit logs, as
//     every writer does (format §6);
//  3. compact (format §7): the new snapshot is written in this binary's
//     format, and the commit log starts empty;
//  4. replace FORMAT (renameio, then fsync the directory): the commit
//     point of the upgrade.
//
// A crash before step 4 leaves FORMAT at the old version: commands keep
// asking for init, and the next init runs the upgrade again. Rows are
// carried over as they are (fields that are new in this format start out
// zero: observed_generation too, which the next pass writes) and written
// in this format's form (since format 5 the flat "spore" record of older
// rows becomes its "wish" and "status", format §3); event logs are not
// touched, but for those no row names, which the compaction's sweep
// removes (format §4). Since format 3 the new commit log begins with its
// header (format §3); older logs have none and are read from their first
// byte.
func upgrade(ctx context.Context, root string, opts Options) error {
	if err := checkLockFile(root); err != nil {
		return err
	}
	lk, err := acquireLock(ctx, filepath.Join(root, lockFile), opts.LockTimeout)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return &state.UnavailableError{Op: "lock store for upgrade", Err: err}
	}
	defer lk.release()
	// Read again under the lock: another init may have finished first.
	from, err := readFormatVersion(root)
	if err != nil || from == formatVersion {
		return err
	}
	if from < oldestFormat {
		return &state.IncompatibleError{Where: root, Found: from, Newest: formatVersion, Details: "too old for this sporectl to upgrade"}
	}
	s := newStore(root, opts)
	m, fi, err := readSnapshotFrom(root, oldestFormat)
	if err != nil {
		return err
	}
	l, err := s.extend(&loaded{m: m, snapInfo: fi})
	if err != nil {
		return err
	}
	if l, err = s.repair(l); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.compact(l); err != nil {
		return err
	}
	failpoint("upgrade-compacted")
	if err := renameio.WriteFile(s.path(formatFile), formatBytes(), 0o600); err != nil {
		return ioErr("upgrade store format", err)
	}
	if err := syncDir(root); err != nil {
		return ioErr("upgrade store format", err)
	}
	opts.Logger.Info("upgraded store format", "store", root, "from", from, "to", formatVersion)
	return nil
}
