package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sporectl/sporectl/reconcile/colonyspec"
)

// stdinName is how errors name the documents read from stdin (-f -).
const stdinName = "<stdin>"

// colonyExts are the files of a directory given to -f that are read.
var colonyExts = []string{".yaml", ".yml", ".json"}

// readColonies reads the Colony documents of every -f: a file, a
// directory (its .yaml, .yml and .json files, by name, not recursing, as
// kubectl does) or - for stdin. The faults of every file are reported
// together; one fault anywhere and nothing is returned.
func readColonies(in io.Reader, paths []string) ([]colonyspec.Document, error) {
	if len(paths) == 0 {
		return nil, usageErrorf("-f is required: give a file, a directory or - for stdin")
	}
	var docs []colonyspec.Document
	var errs []error
	read := func(name string, data []byte) {
		d, err := colonyspec.Read(name, data)
		if err != nil {
			errs = append(errs, err)
		}
		docs = append(docs, d...)
	}
	stdin := false
	for _, p := range paths {
		if p == "-" {
			if stdin {
				return nil, usageErrorf("-f - is given twice: stdin can be read once")
			}
			stdin = true
			data, err := io.ReadAll(in)
			if err != nil {
				return nil, fmt.Errorf("read stdin: %w", err)
			}
			read(stdinName, data)
			continue
		}
		files, err := colonyFiles(p)
		if err != nil {
			return nil, err
		}
		for _, name := range files {
			data, err := os.ReadFile(name)
			if err != nil {
				return nil, usageErrorf("-f %s: %v", p, errors.Unwrap(err))
			}
			read(name, data)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(docs) == 0 {
		return nil, usageErrorf("-f %s: no Colony documents", strings.Join(paths, " -f "))
	}
	return docs, nil
}

// colonyFiles is p, or the files of directory p that readColonies reads.
func colonyFiles(p string) ([]string, error) {
	fi, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, usageErrorf("-f %s: no such file or directory", p)
		}
		return nil, usageErrorf("-f %s: %v", p, errors.Unwrap(err))
	}
	if !fi.IsDir() {
		return []string{p}, nil
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, usageErrorf("-f %s: %v", p, errors.Unwrap(err))
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() && slices.Contains(colonyExts, filepath.Ext(e.Name())) {
			files = append(files, filepath.Join(p, e.Name()))
		}
	}
	if len(files) == 0 {
		return nil, usageErrorf("-f %s: a directory with no .yaml, .yml or .json file", p)
	}
	return files, nil
}
