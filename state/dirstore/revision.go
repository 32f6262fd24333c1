package dirstore

import (
	"context"
	"fmt"
	"path/filepath"
	"syscall"
)

// Revision is the last transaction committed to the state this View
// reads, after which store: the FORMAT file's inode and modification
// time, which only init writes, so that a store made again at the same
// path (whose transactions count from 1 again) has other revisions. A
// compaction keeps the revision: it changes no data.
func (t *tx) Revision(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if t.write {
		return "", nil
	}
	var st syscall.Stat_t
	p := filepath.Join(t.s.root, formatFile)
	if err := syscall.Lstat(p, &st); err != nil {
		return "", fmt.Errorf("revision: stat %s: %w", p, err)
	}
	return fmt.Sprintf("%d.%d.%d", st.Ino, st.Mtim.Nano(), t.base.txid), nil
}
