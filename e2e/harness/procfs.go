package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// What e2e benchmarks and bench/ read of a process from /proc: its CPU time
// (the house measure of cost per request, which survives a noisy machine)
// and its resident memory. Linux only, like the rest of the harness.

// clockTick is the unit of utime and stime in /proc/<pid>/stat (USER_HZ,
// 100 on Linux).
const clockTick = 10 * time.Millisecond

// CPUTime returns the CPU time (user + system, all threads) pid used so
// far: the sum of its threads' run time in nanoseconds from
// /proc/<pid>/task/*/schedstat (the scheduler's own clock), or, where
// schedstat is missing, StatCPUTime (10 ms ticks: too coarse for a round
// of a few hundred ms of CPU). A thread that exited between two readings
// takes its time with it; Envoy's and thaw's threads live as long as the
// process. Errors are StatCPUTime's.
func CPUTime(pid int) (time.Duration, error) {
	if d, ok := schedTime(pid); ok {
		return d, nil
	}
	return StatCPUTime(pid)
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

// StatCPUTime returns utime + stime of pid from /proc/<pid>/stat, in
// whole clock ticks (10 ms). It fails when the process is gone or the
// file does not parse.
func StatCPUTime(pid int) (time.Duration, error) {
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

// StatusBytes returns a "kB" field of /proc/<pid>/status ("VmRSS",
// "VmHWM", ...) in bytes. It fails when the process is gone or has no
// such field.
func StatusBytes(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("%s of %d: %w", field, pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok || name != field {
			continue
		}
		f := strings.Fields(rest)
		if len(f) < 1 {
			break
		}
		kib, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s of %d: %w", field, pid, err)
		}
		return kib << 10, nil
	}
	return 0, fmt.Errorf("%s of %d: not in /proc/%d/status", field, pid, pid)
}

// RSS returns the resident set size of pid in bytes (VmRSS).
func RSS(pid int) (int64, error) { return StatusBytes(pid, "VmRSS") }
