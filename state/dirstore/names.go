package dirstore

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sporectl/sporectl/state"
)

// Names of files under events/ come from the store's own rows, so they are
// data, and data is not trusted as a path (format §4): a row's log name must
// be "<id>.<tx>.log" with <id> the row's own spore id (which the id grammar
// keeps to lowercase letters, digits and '-': no separator, no dot) and
// <tx> a transaction number without leading zeros, no later than the
// record that holds the row. Rows are checked as they are decoded, so no
// command, reader or writer, ever opens, truncates, appends to or removes a
// path a row made up; a bad row is a CorruptError naming its file and line.

// logFileName is the event log of spore id created by transaction tx.
func logFileName(id string, tx uint64) string {
	return id + "." + strconv.FormatUint(tx, 10) + ".log"
}

// parseLogName splits an event log's name into its spore id and creating
// transaction, or says it is not one.
func parseLogName(name string) (id string, tx uint64, ok bool) {
	i := strings.IndexByte(name, '.')
	if i < 0 || state.ValidateID(name[:i]) != nil {
		return "", 0, false
	}
	tx, ok = logTx(name[:i], name)
	return name[:i], tx, ok
}

// logTx returns the transaction in file if it is "<id>.<tx>.log" for this
// (already valid) id.
func logTx(id, file string) (uint64, bool) {
	if len(file) <= len(id)+1 || file[:len(id)] != id || file[len(id)] != '.' {
		return 0, false
	}
	num, ok := strings.CutSuffix(file[len(id)+1:], ".log")
	if !ok || num == "" || num[0] == '0' || len(num) > 20 {
		return 0, false
	}
	for j := 0; j < len(num); j++ {
		if num[j] < '0' || num[j] > '9' {
			return 0, false
		}
	}
	tx, err := strconv.ParseUint(num, 10, 64)
	return tx, err == nil
}

// checkRow is what every decoder asks of a row keyed id in a record of
// transaction atTx (a snapshot: its header's tx): a valid spore id and an
// event log name derived from it. It returns why not, or "".
func checkRow(id string, r *row, atTx uint64) string {
	if err := state.ValidateID(id); err != nil {
		return fmt.Sprintf("row of spore %q: %v", id, err)
	}
	if r == nil {
		return ""
	}
	if r.Spore.ID != id {
		return fmt.Sprintf("row keyed %q holds spore %q", id, r.Spore.ID)
	}
	tx, ok := logTx(id, r.Log.File)
	if !ok {
		return fmt.Sprintf("spore %s: its event log is named %q, not %q; a name read from the store is never used as a path unchecked", id, r.Log.File, id+".<tx>.log")
	}
	if tx > atTx {
		return fmt.Sprintf("spore %s: event log %q names transaction %d, later than transaction %d that records it", id, r.Log.File, tx, atTx)
	}
	if r.Log.Size < 0 {
		return fmt.Sprintf("spore %s: event log size %d is negative", id, r.Log.Size)
	}
	return ""
}

// logPath is where the event log of a checked row lives. It checks the
// name again, so that no path is ever built from an unchecked one (rows
// built in memory by CreateSpore come from a validated id and a tx).
func (s *Store) logPath(id, file string) (string, string, error) {
	name := eventsDir + "/" + file
	if lid, _, ok := parseLogName(file); !ok || lid != id {
		return "", name, &state.CorruptError{File: name, Offset: 0, Reason: fmt.Sprintf("is not an event log name of spore %s", id)}
	}
	return s.path(eventsDir, file), name, nil
}
