// Package local is the one-machine runtime, the embedded default: a spore
// is a process tree on this machine — `sporectl bridge` started in its own
// session, with Claude Code and its tools below it — and its home is a
// directory.
//
// It observes, it never remembers: a run file records the bridge's pid,
// the kernel's start time of that pid and the boot id, and is believed only
// when all three still match a live process that carries the spore's mark.
// A stale run file (the process died, the pid was reused, the machine
// rebooted) means the recorded bridge is not running, and the next start
// simply replaces it.
//
// It must never signal a process it cannot prove is the spore's: a pid is
// only trusted with its start time, the boot id and the spore's mark (its
// id and home in the process's environment), and the process tree is found
// by the bridge's session id and by that mark. Observation finds processes
// by their mark too, so a bridge whose run file is missing or damaged is
// reported as running, never as nothing.
package local
