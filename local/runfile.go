package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/google/renameio/v2"
)

// runFile records a started bridge. It is a claim to be verified, never a
// fact: see alive.
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

func writeRunFile(path string, rf *runFile) error {
	b, err := json.Marshal(rf)
	if err != nil {
		return err
	}
	// renameio syncs the file before renaming it into place; syncing the
	// directory makes the rename itself durable.
	if err := renameio.WriteFile(path, b, 0o600); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
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
