package local

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sporectl/sporectl/bridge/sporeenv"
	"github.com/sporectl/sporectl/state"
)

// procStat is what /proc/PID/stat says about identity: the session a
// process belongs to and when it started (clock ticks after boot).
type procStat struct {
	PID       int
	Session   int
	StartTime uint64
	State     byte
	// Flags are the kernel's PF_* flags of the process.
	Flags uint64
	// EnvStart and EnvEnd bound its environment in its memory; both 0
	// until an execve has laid out the new image's stack (and when this
	// process may not read them).
	EnvStart, EnvEnd uint64
	// UTime and STime are the CPU time it used in user and kernel mode,
	// in clock ticks (clockTicks a second).
	UTime, STime uint64
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
	// utime(14) stime(15); unparsable ones count as 0.
	utime, _ := strconv.ParseUint(f[11], 10, 64)
	stime, _ := strconv.ParseUint(f[12], 10, 64)
	// flags(9); unparsable ones count as none.
	flags, _ := strconv.ParseUint(f[6], 10, 64)
	st := procStat{PID: pid, Session: sid, StartTime: start, State: f[0][0], Flags: flags, UTime: utime, STime: stime}
	// env_start(48) env_end(49), since Linux 3.5.
	if len(f) >= 47 {
		st.EnvStart, _ = strconv.ParseUint(f[45], 10, 64)
		st.EnvEnd, _ = strconv.ParseUint(f[46], 10, 64)
	}
	return st, nil
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

// scanHook is called at each scan of /proc (tests count them).
var scanHook = func() {}

// liveProcesses lists live processes (zombies and this one excluded) for
// which keep says yes.
func liveProcesses(keep func(procStat) bool) []int {
	scanHook()
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

// hasMark reports whether pid's environment carries the mark of spore
// id's processes: sporeenv.SporeID=id, set in every bridge's environment
// and inherited by Claude Code and its tools, and HOME=home. The id alone
// is not enough, since two stores on one machine may both have a spore of
// that id.
func hasMark(pid int, id, home string) bool {
	b, err := environ(pid)
	if err != nil {
		return false
	}
	wantID, wantHome := []byte(sporeenv.SporeID+"="+id), []byte("HOME="+home)
	var idOK, homeOK bool
	for _, kv := range bytes.Split(b, []byte{0}) {
		idOK = idOK || bytes.Equal(kv, wantID)
		homeOK = homeOK || bytes.Equal(kv, wantHome)
	}
	return idOK && homeOK
}

// markOf reads pid's environment for the mark of a spore: a
// SPORECTL_SPORE_ID=ID that is a valid id and a HOME that is homeOf(ID).
func markOf(pid int, homeOf func(id string) string) (string, bool) {
	b, err := environ(pid)
	if err != nil {
		return "", false
	}
	var ids, homes [][]byte
	for _, kv := range bytes.Split(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte(sporeenv.SporeID+"=")); ok {
			ids = append(ids, v)
		} else if v, ok := bytes.CutPrefix(kv, []byte("HOME=")); ok {
			homes = append(homes, v)
		}
	}
	for _, id := range ids {
		if state.ValidateID(string(id)) != nil {
			continue
		}
		want := []byte(homeOf(string(id)))
		for _, h := range homes {
			if bytes.Equal(h, want) {
				return string(id), true
			}
		}
	}
	return "", false
}

// pfKthread is PF_KTHREAD: the process is a kernel thread, which has no
// environment or command line, ever.
const pfKthread = 0x00200000

// execSettle bounds how long environ waits for a process to come out of
// an execve: far longer than the microseconds it takes, so that only a
// process stalled in the kernel (a frozen cgroup) runs it out.
const execSettle = time.Second

// emptySettle is how long environ believes an empty environment once
// the kernel has laid it out: it is empty for the moment the kernel
// fills it in, and for good in a process started with none.
const emptySettle = 50 * time.Millisecond

// environ reads pid's environment (NUL-separated KEY=VALUE). From the
// moment execve switches a process to its new image until the kernel has
// laid out the image's stack, /proc shows the process with an empty
// environment; a bridge Start has just run (cmd.Start returns as its
// exec commits), or a script that execs the real bridge, is caught there
// often enough. Read then, the bridge would look unmarked: exited to
// WaitReady and Observe, out of reach of Stop. So an empty answer from a
// process that is not a kernel thread is read again: while the kernel
// has not placed its environment (env_end 0) for up to execSettle, and
// for emptySettle once it has, until it is not empty or the process is
// gone or is another.
func environ(pid int) ([]byte, error) {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	b, err := os.ReadFile(filepath.Join(dir, "environ"))
	if err != nil || len(b) > 0 {
		return b, err
	}
	first, err := readProcStat(pid)
	if err != nil || first.Flags&pfKthread != 0 {
		return b, nil
	}
	deadline := time.Now().Add(execSettle)
	var placed time.Time // when env_end was first seen set
	for {
		st, err := readProcStat(pid)
		if err != nil || st.StartTime != first.StartTime || st.State == 'Z' {
			// Gone, or exiting (its memory, and so its environment, is
			// released before it is a zombie), or its pid reused.
			return b, nil
		}
		now := time.Now()
		if st.EnvEnd != 0 && placed.IsZero() {
			placed = now
		}
		if b, err = os.ReadFile(filepath.Join(dir, "environ")); err != nil || len(b) > 0 {
			return b, err
		}
		if now.After(deadline) || (!placed.IsZero() && now.Sub(placed) > emptySettle) {
			return b, nil
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// MarkedProcesses lists the live processes that carry the mark of spore
// id whose home is home: those Stop ends. The command tests count a
// spore's processes through it, so they see what the runtime sees, a
// process caught inside an execve included.
func MarkedProcesses(id, home string) []int {
	return liveProcesses(func(st procStat) bool { return hasMark(st.PID, id, home) })
}

// bridgeAddr reports whether process st runs the command Start runs for
// the spore whose home is home — "… bridge --addr ADDR --home HOME …", as
// the leader of its own session — and the address it was given, "" unless
// it is 127.0.0.1:PORT. The spore's agent and the tools below it carry its
// mark too, but are not its bridge.
func bridgeAddr(st procStat, home string) (string, bool) {
	if st.Session != st.PID {
		return "", false
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(st.PID), "cmdline"))
	if err != nil {
		return "", false
	}
	args := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
	sub := slices.Index(args, "bridge")
	if sub < 0 {
		return "", false
	}
	var addr string
	isBridge := false
	for i := sub + 1; i+1 < len(args); i++ {
		switch args[i] {
		case "--home":
			isBridge = isBridge || args[i+1] == home
		case "--addr":
			addr = args[i+1]
		}
	}
	if !isBridge {
		return "", false
	}
	if !loopbackAddr(addr) {
		addr = ""
	}
	return addr, true
}

// markedBridge is a process running a spore's bridge command.
type markedBridge struct {
	procStat
	Addr string // from its command line; "" unless 127.0.0.1:PORT
}

// markedTree is what one scan of /proc found of one spore: the processes
// that run its bridge command, and how many other marked processes (its
// agent, tools, leftovers of a bridge that died) there are.
type markedTree struct {
	Bridges []markedBridge
	Others  int
}

// markedFleet scans /proc once for the marked processes of every spore
// whose home is homeOf(id), whatever its id: the spores of the store and
// ids it does not know (orphans), with or without run files.
func markedFleet(homeOf func(id string) string) map[string]*markedTree {
	out := map[string]*markedTree{}
	liveProcesses(func(st procStat) bool {
		id, ok := markOf(st.PID, homeOf)
		if !ok {
			return false
		}
		t := out[id]
		if t == nil {
			t = &markedTree{}
			out[id] = t
		}
		if addr, ok := bridgeAddr(st, homeOf(id)); ok {
			t.Bridges = append(t.Bridges, markedBridge{st, addr})
		} else {
			t.Others++
		}
		return true
	})
	return out
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat's start
// time: 100 on every architecture Go supports on Linux.
const clockTicks = 100

// age is how long ago process st started, from /proc/uptime; false when
// that cannot be read.
func age(st procStat) (time.Duration, bool) {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, false
	}
	up, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0, false
	}
	started := time.Duration(st.StartTime) * time.Second / clockTicks
	return time.Duration(up*float64(time.Second)) - started, true
}

// residentBytes is pid's resident set from /proc/PID/statm (its second
// field, in pages); false when that cannot be read.
func residentBytes(pid int) (int64, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "statm"))
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0, false
	}
	return pages * int64(os.Getpagesize()), true
}
