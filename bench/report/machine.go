package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// machine is what BENCHMARKS.md says about where the figures come from.
type machine struct {
	Date     string
	CPU      string
	CPUs     int
	MemoryGi string
	Kernel   string
	Go       string
	Envoy    string
	Thaw     string
}

func readMachine(envoyBin string) machine {
	m := machine{Date: time.Now().UTC().Format("2006-01-02 15:04 MST"), CPUs: runtime.NumCPU(), Go: runtime.Version(),
		CPU: "unknown", MemoryGi: "unknown", Kernel: "unknown", Envoy: "unknown", Thaw: "unknown"}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
				m.MemoryGi = fmt.Sprintf("%.1f GiB", kb/(1<<20))
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = "Linux " + strings.TrimSpace(string(b))
	}
	if envoyBin != "" {
		if out, err := exec.Command(envoyBin, "--version").Output(); err == nil {
			m.Envoy = envoyVersion(string(out))
		}
	}
	if out, err := exec.Command("git", "describe", "--tags", "--always", "--dirty").Output(); err == nil {
		m.Thaw = strings.TrimSpace(string(out))
	}
	return m
}

// envoyVersion picks "1.40.0/…" out of `envoy --version` output.
func envoyVersion(out string) string {
	out = strings.TrimSpace(out)
	if _, v, ok := strings.Cut(out, "version: "); ok {
		return strings.TrimSpace(v)
	}
	return out
}

// loadAvg reads a copy of /proc/loadavg ("1.00 2.00 3.00 ...") and
// returns its three averages, or "unknown".
func loadAvg(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " / ")
}
