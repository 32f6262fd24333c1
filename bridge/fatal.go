package bridge

import "strings"

// FatalPrefix starts the line a bridge that exits on an error writes last
// on its stderr ("error: " and why, as every sporectl command reports a
// failure): the runtimes find the bridge's own reason for exiting there
// (the local run log, a container's termination message).
const FatalPrefix = "error: "

// maxFatal bounds the reason taken from one line: a runtime shows it in
// a status column, not a page.
const maxFatal = 300

// FatalError is the reason in the last fatal line of tail (the end of a
// bridge's stderr), without its prefix, trimmed and cut to a few hundred
// bytes at a rune boundary; "" when tail has none. It is raw text:
// whoever shows it escapes control characters.
func FatalError(tail string) string {
	lines := strings.Split(tail, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		msg, ok := strings.CutPrefix(lines[i], FatalPrefix)
		if !ok {
			continue
		}
		msg = strings.TrimSpace(msg)
		if len(msg) > maxFatal {
			cut := maxFatal
			for cut > 0 && msg[cut]&0xc0 == 0x80 {
				cut-- // not inside a UTF-8 sequence
			}
			msg = msg[:cut] + "…"
		}
		return msg
	}
	return ""
}
