package local

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// procStat is what /proc/PID/stat says about identity: the session a
// process belongs to and when it started (clock ticks after boot).
type procStat struct {
	PID       int
	Session   int
	StartTime uint64
	State     byte
}

// readProcStat parses /proc/PID/stat. The command name may contain spaces
// and parentheses, so fields are counted from the last ')'.
func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStat{}, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return procStat{}, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+2:]))
	// After the command: state(3) ppid(4) pgrp(5) session(6) … starttime(22).
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("short /proc/%d/stat", pid)
	}
	sid, err1 := strconv.Atoi(f[3])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err1 != nil || err2 != nil {
		return procStat{}, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	return procStat{PID: pid, Session: sid, StartTime: start, State: f[0][0]}, nil
}

// bootID changes at every boot, so a run file from before a reboot is
// recognised as stale even if its pid is alive again.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// liveProcesses lists live processes (zombies and this one excluded) for
// which keep says yes.
func liveProcesses(keep func(procStat) bool) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if st, err := readProcStat(pid); err == nil && st.State != 'Z' && keep(st) {
			out = append(out, pid)
		}
	}
	return out
}

// sessionMembers lists live processes in session sid.
func sessionMembers(sid int) []int {
	return liveProcesses(func(st procStat) bool { return st.Session == sid })
}

// markEnv is set in every bridge's environment and inherited by Claude
// Code and its tools: the ownership mark of a spore's processes.
const markEnv = "SPORECTL_SPORE_ID"

// hasMark reports whether pid's environment names spore id and its home:
// the id alone is not enough, since two stores on one machine may both
// have a spore of that id.
func hasMark(pid int, id, home string) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
	if err != nil {
		return false
	}
	wantID, wantHome := []byte(markEnv+"="+id), []byte("HOME="+home)
	var idOK, homeOK bool
	for _, kv := range bytes.Split(b, []byte{0}) {
		idOK = idOK || bytes.Equal(kv, wantID)
		homeOK = homeOK || bytes.Equal(kv, wantHome)
	}
	return idOK && homeOK
}

// markedProcesses lists live processes that carry the spore's mark.
func markedProcesses(id, home string) []int {
	return liveProcesses(func(st procStat) bool { return hasMark(st.PID, id, home) })
}
