package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of utime and stime in /proc/<pid>/stat (USER_HZ,
// 100 on Linux).
const clockTick = 10 * time.Millisecond

// cpuTime returns the CPU time (user + system, all threads) pid used so
// far: the sum of its threads' run time in nanoseconds from
// /proc/<pid>/task/*/schedstat (the scheduler's own clock), or, where
// schedstat is missing, utime + stime from /proc/<pid>/stat in clock ticks
// (10 ms: too coarse for a round of a few hundred ms of CPU). A thread
// that exited between two readings takes its time with it; Envoy's and
// thaw's threads live as long as the process.
func cpuTime(pid int) (time.Duration, error) {
	if d, ok := schedTime(pid); ok {
		return d, nil
	}
	return statTime(pid)
}

// schedTime sums the first field (ns on CPU) of every thread's schedstat.
func schedTime(pid int) (time.Duration, bool) {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	var sum int64
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread exited
		}
		fs := strings.Fields(string(b))
		if len(fs) == 0 {
			return 0, false
		}
		ns, err := strconv.ParseInt(fs[0], 10, 64)
		if err != nil {
			return 0, false
		}
		sum += ns
	}
	return time.Duration(sum), len(files) > 0
}

// statTime returns utime + stime of pid from /proc/<pid>/stat.
func statTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("cpu time of %d: %w", pid, err)
	}
	// The command name (field 2) may hold spaces: count fields after ')'.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("cpu time of %d: short /proc stat", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("cpu time of %d: bad /proc stat", pid)
	}
	return time.Duration(ut+st) * clockTick, nil
}

// childNamed returns the pid of the child of parent whose command is comm.
func childNamed(parent int, comm string) (int, error) {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) < 2 || s[open+1:end] != comm || f[1] != strconv.Itoa(parent) {
			continue
		}
		return strconv.Atoi(filepath.Base(d))
	}
	return 0, fmt.Errorf("no %s child of %d", comm, parent)
}

// cpuMeter sums the CPU time processes use while a side runs.
type cpuMeter struct {
	pids   []int
	before []time.Duration
}

func startCPU(pids ...int) *cpuMeter {
	m := &cpuMeter{pids: pids, before: make([]time.Duration, len(pids))}
	for i, p := range pids {
		m.before[i], _ = cpuTime(p)
	}
	return m
}

// stop returns each process's CPU time since startCPU.
func (m *cpuMeter) stop() []time.Duration {
	out := make([]time.Duration, len(m.pids))
	for i, p := range m.pids {
		now, _ := cpuTime(p)
		out[i] = now - m.before[i]
	}
	return out
}
