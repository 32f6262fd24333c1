package server

import (
	"fmt"
	"os"
	"path/filepath"
)

// Layout of the bridge's directory in the home (docs/bridge.md, "Files").
const (
	stateDirName = ".sporectl-bridge"
	logName      = "events.log"
	queueName    = "queue.jsonl"
	sessionName  = "session.json"
	tokenName    = "token"
	lockName     = "lock"
)

func stateDir(home string) string { return filepath.Join(home, stateDirName) }

// writeFileDurably replaces path with data: temp file, fsync, rename,
// fsync of the directory (rename alone is atomic but not durable).
func writeFileDurably(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("fsync %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync dir %s: %w", dir, err)
	}
	return nil
}
