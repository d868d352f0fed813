package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

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
		m.before[i], _ = harness.CPUTime(p)
	}
	return m
}

// stop returns each process's CPU time since startCPU.
func (m *cpuMeter) stop() []time.Duration {
	out := make([]time.Duration, len(m.pids))
	for i, p := range m.pids {
		now, _ := harness.CPUTime(p)
		out[i] = now - m.before[i]
	}
	return out
}
