package main

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/thaw-dev/thaw/bench/results"
	"github.com/thaw-dev/thaw/e2e/harness"
)

// runScale starts the real `thaw local` with n idle revisions (initial
// scale 0: no backend process runs) and measures how long it takes until
// Envoy has acknowledged all of them, then thaw's and Envoy's resident
// memory once the autoscaler loops have ticked for a while.
func runScale(e *env, n int) (*results.Scale, error) {
	dir, err := e.tempDir("scale")
	if err != nil {
		return nil, err
	}
	revs := make([]rev, n)
	for i := range revs {
		revs[i] = rev{name: fmt.Sprintf("s%05d", i), autoscaling: map[string]string{"initial-scale": "0"}}
	}
	start := time.Now()
	th, err := startThaw(e.ctx, e, dir, localConfig(e.workloadBin, revs...))
	if err != nil {
		return nil, err
	}
	defer e.stopLogged(th.process)
	res := &results.Scale{Revisions: n, ReadySeconds: time.Since(start).Seconds(), SettleSeconds: 20}
	if e.quick {
		res.SettleSeconds = 5
	}
	select {
	case <-e.ctx.Done():
		return nil, e.ctx.Err()
	case <-time.After(time.Duration(res.SettleSeconds * float64(time.Second))):
	}
	pid := th.Pid()
	if res.ThawRSSMiB, err = procStatusMiB(pid, "VmRSS"); err != nil {
		return nil, err
	}
	res.ThawPeakRSSMiB, _ = procStatusMiB(pid, "VmHWM")
	if b, err := os.ReadFile(filepath.Join(dir, "state", "envoy.pid")); err == nil {
		if epid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			res.EnvoyRSSMiB, _ = procStatusMiB(epid, "VmRSS")
		}
	}
	m, err := scrape(th.adminURL + "/metrics")
	if err != nil {
		return nil, err
	}
	res.HeapInuseMiB = m["go_memstats_heap_inuse_bytes"] / (1 << 20)
	res.StackInuseMiB = m["go_memstats_stack_inuse_bytes"] / (1 << 20)
	res.Goroutines = m["go_goroutines"]
	e.logf("scale: %d revisions ready in %.2fs; thaw RSS %.0f MiB (peak %.0f), envoy RSS %.0f MiB",
		n, res.ReadySeconds, res.ThawRSSMiB, res.ThawPeakRSSMiB, res.EnvoyRSSMiB)
	return res, nil
}

// procStatusMiB reads a "kB" field of /proc/<pid>/status in MiB
// (harness.StatusBytes).
func procStatusMiB(pid int, field string) (float64, error) {
	b, err := harness.StatusBytes(pid, field)
	return float64(b) / (1 << 20), err
}

// scrape reads the samples of a Prometheus text endpoint, keyed by name,
// or by name{labels} as printed; within 60 s (thaw at 100k revisions on a
// loaded machine has taken more than 10).
func scrape(url string) (map[string]float64, error) {
	c := &http.Client{Timeout: 60 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		// name or name{labels} (label values may hold spaces), then the value.
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		name, val := line[:i], line[i+1:]
		if v, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
			out[name] = v
		}
	}
	return out, sc.Err()
}
