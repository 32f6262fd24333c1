package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// runFile records a started bridge. It is a claim to be verified, never a
// fact: see verified.
type runFile struct {
	PID       int       `json:"pid"`
	StartTime uint64    `json:"start_time"` // /proc/PID/stat starttime
	BootID    string    `json:"boot_id"`
	Addr      string    `json:"addr"`
	Started   time.Time `json:"started"`
}

func readRunFile(path string) (*runFile, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read run file: %w", err)
	}
	var rf runFile
	if err := json.Unmarshal(b, &rf); err != nil {
		// A damaged run file proves nothing: treat it as absent, never
		// as a pid to signal.
		return nil, nil
	}
	return &rf, nil
}

// writeRunFile replaces the run file atomically (a temporary file renamed
// into place), without fsync: a run file is believed only in the boot that
// wrote it (its boot id), and only a crash of the machine — a new boot —
// could lose what the page cache holds. Kept short, it leaves little time
// between a bridge's spawn and its record for a start to be killed in.
func writeRunFile(path string, rf *runFile) error {
	b, err := json.Marshal(rf)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// verified reports whether rf describes spore id's live bridge: a live
// process (see alive) that carries the spore's mark, at the loopback
// address Start gives it. Only then is its pid signalled, its session
// ended and its address sent the bridge token; anything else a run file
// says proves nothing.
func (r *Runtime) verified(id string, rf *runFile) bool {
	return rf.alive() && loopbackAddr(rf.Addr) && hasMark(rf.PID, id, r.home(id))
}

// loopbackAddr reports whether addr is what Start records: 127.0.0.1:PORT.
func loopbackAddr(addr string) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host != "127.0.0.1" {
		return false
	}
	n, err := strconv.Atoi(port)
	return err == nil && n > 0 && n <= 65535
}

// alive reports whether the run file still describes a live process: the
// same pid, started at the same tick, in this boot.
func (rf *runFile) alive() bool {
	if rf == nil || rf.PID <= 0 || rf.BootID != bootID() {
		return false
	}
	st, err := readProcStat(rf.PID)
	return err == nil && st.StartTime == rf.StartTime && st.State != 'Z'
}
