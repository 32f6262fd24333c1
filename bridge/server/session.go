package server

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// session is session.json: the one Claude session this home's agent
// speaks in. Started becomes true once a turn has run on it, after which
// turns resume it rather than create it.
type session struct {
	ID      string `json:"session_id"`
	Started bool   `json:"started"`
}

// loadSession reads session.json, creating it with a fresh id the first
// time, durably, so a new pod on the same home resumes the same session.
func loadSession(dir string) (session, error) {
	path := filepath.Join(dir, sessionName)
	b, err := os.ReadFile(path)
	if err == nil {
		var s session
		if err := json.Unmarshal(b, &s); err != nil || s.ID == "" {
			return session{}, fmt.Errorf("read session %s: not a session file", path)
		}
		return s, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return session{}, fmt.Errorf("read session %s: %w", path, err)
	}
	s := session{ID: newUUID()}
	return s, saveSession(dir, s)
}

func saveSession(dir string, s session) error {
	b, _ := json.Marshal(s)
	return writeFileDurably(filepath.Join(dir, sessionName), append(b, '\n'))
}

// claudeHasSession reports whether Claude Code already wrote the session
// under home/.claude — true after a crash between its first write and our
// marking the session started; creating it again would be refused.
func claudeHasSession(home, id string) bool {
	m, _ := filepath.Glob(filepath.Join(home, ".claude", "projects", "*", id+".jsonl"))
	return len(m) > 0
}

// newUUID is a random (version 4) UUID, the form --session-id wants.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
