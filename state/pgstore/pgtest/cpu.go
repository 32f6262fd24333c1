package pgtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// CPU is the processor time the server's processes have spent so far:
// the postmaster's, its live children's (each connection's backend, the
// WAL writer, the checkpointer…), and those of the children it has
// reaped. A benchmark takes the difference across its calls for what the
// server spent on them, which the client process's own CPU leaves out.
// Linux only (/proc).
func (s *Server) CPU() (time.Duration, error) {
	s.mu.Lock()
	if s.cmd == nil || s.cmd.Process == nil {
		s.mu.Unlock()
		return 0, fmt.Errorf("pgtest: the server is not running")
	}
	pm := s.cmd.Process.Pid
	s.mu.Unlock()
	fields, err := procStat(pm)
	if err != nil {
		return 0, err
	}
	// utime, stime, cutime, cstime: the reaped children are in the last two.
	ticks := fields[11] + fields[12] + fields[13] + fields[14]
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil || pid == pm {
			continue
		}
		f, err := procStat(pid)
		if err != nil || f[1] != int64(pm) {
			continue // gone meanwhile, or not the server's
		}
		ticks += f[11] + f[12]
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// clockTicks is USER_HZ, the unit of /proc's times: 100 on every
// architecture Linux runs these tests on.
const clockTicks = 100

// procStat is /proc/pid/stat's numeric fields after the command name,
// from the state on: [0] is the state's place (0), [1] the parent's pid,
// [11] utime, [12] stime, [13] cutime, [14] cstime.
func procStat(pid int) ([]int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	s := string(b)
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return nil, fmt.Errorf("pgtest: /proc/%d/stat: no command name", pid)
	}
	words := strings.Fields(s[end+1:])
	if len(words) < 15 {
		return nil, fmt.Errorf("pgtest: /proc/%d/stat: %d fields", pid, len(words))
	}
	out := make([]int64, 15)
	for i := 1; i < 15; i++ {
		if out[i], err = strconv.ParseInt(words[i], 10, 64); err != nil {
			return nil, fmt.Errorf("pgtest: /proc/%d/stat field %d: %w", pid, i, err)
		}
	}
	return out, nil
}
