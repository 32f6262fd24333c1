package dirstore

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/sporectl/sporectl/state"
)

// The FORMAT file marks a directory as a store (format §1):
//
//	sporectl store
//	format 8
const formatMagic = "sporectl store"

func formatBytes() []byte {
	return []byte(formatMagic + "\nformat " + strconv.Itoa(formatVersion) + "\n")
}

// parseFormat returns the version in a FORMAT file's contents.
func parseFormat(data []byte) (int, error) {
	lines := bytes.Split(data, []byte("\n"))
	if len(lines) < 2 || string(lines[0]) != formatMagic {
		return 0, &state.CorruptError{File: formatFile, Line: 1, Offset: -1, Reason: fmt.Sprintf("want %q", formatMagic)}
	}
	v, ok := bytes.CutPrefix(lines[1], []byte("format "))
	n, err := strconv.Atoi(string(v))
	if !ok || err != nil || n < 1 {
		return 0, &state.CorruptError{File: formatFile, Line: 2, Offset: -1, Reason: "want \"format N\" with N a positive integer"}
	}
	for i, l := range lines[2:] {
		if len(l) > 0 {
			return 0, &state.CorruptError{File: formatFile, Line: i + 3, Offset: -1, Reason: "unexpected content"}
		}
	}
	return n, nil
}

// readFormat checks that root is a store of this binary's format. A newer
// one is an IncompatibleError that says to upgrade sporectl, an older one
// an IncompatibleError that says to run init (format §10).
func readFormat(root string) error {
	v, err := readFormatVersion(root)
	if err != nil {
		return err
	}
	if v < formatVersion {
		return &state.IncompatibleError{Where: root, Found: v, Newest: formatVersion}
	}
	return nil
}

// readFormatVersion returns the version FORMAT names: an error when root
// is no store, FORMAT is damaged, or the version is newer than this
// binary's. An older version is returned without error.
func readFormatVersion(root string) (int, error) {
	data, err := readFileNoFollow(filepath.Join(root, formatFile), filepath.Join(root, formatFile), 4096)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		if fi, serr := os.Stat(root); serr == nil && !fi.IsDir() {
			return 0, fmt.Errorf("%s is a file, not a store directory: %w", root, state.ErrNoStore)
		}
		return 0, fmt.Errorf("%s: %w", root, state.ErrNoStore)
	}
	if err != nil {
		return 0, storeErr("read "+formatFile, err)
	}
	v, err := parseFormat(data)
	if err != nil {
		var ce *state.CorruptError
		if errors.As(err, &ce) {
			ce.File = filepath.Join(root, ce.File)
		}
		return 0, err
	}
	if v > formatVersion {
		return 0, &state.IncompatibleError{Where: root, Found: v, Newest: formatVersion}
	}
	return v, nil
}
