package dirstore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// Revision is the last transaction committed to the state this View
// reads, after which store and snapshot: the inode and modification time
// of FORMAT, which only init writes, so that a store made again at the
// same path (whose transactions count from 1 again) has other
// revisions, and the inode, size and modification time state.json had
// when the View's state was read from it, so that a snapshot changed by
// hand, with no transaction, makes another. A compaction makes another
// (a new state.json) though it changes no data; a reader that kept what
// it made of the revision then reads once more.
func (t *tx) Revision(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if t.write {
		return "", nil
	}
	p := filepath.Join(t.s.root, formatFile)
	fi, err := os.Lstat(p)
	if err != nil {
		return "", fmt.Errorf("revision: stat %s: %w", p, err)
	}
	snap := "-" // a state made in memory by init
	if t.base.snap != nil {
		snap = t.base.snap.file
	}
	b := strconv.AppendUint(nil, t.base.gen, 10)
	b = append(b, '.')
	b = strconv.AppendUint(b, t.base.txid, 10)
	return string(b) + "/" + fileIdentity(fi) + "/" + snap, nil
}

// fileIdentity names the version of a file fi describes: its inode,
// size and modification time (ns).
func fileIdentity(fi os.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Sprintf("?.%d.%d", fi.Size(), fi.ModTime().UnixNano())
	}
	return fmt.Sprintf("%d.%d.%d", st.Ino, st.Size, st.Mtim.Nano())
}
