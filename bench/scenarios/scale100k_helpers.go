package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/thaw-dev/thaw/bench/results"
)

// haveMemory fails when the machine has less than need bytes available
// (MemAvailable), so the scenario stops before Envoy runs out.
func haveMemory(need int64) error {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return fmt.Errorf("memory check: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return fmt.Errorf("memory check: %w", err)
			}
			if kb<<10 < need {
				return fmt.Errorf("memory check: %d MiB available, the scenario needs %d MiB (Envoy and thaw); use -quick for fewer revisions",
					kb>>10, need>>20)
			}
			return nil
		}
	}
	return errors.New("memory check: no MemAvailable in /proc/meminfo")
}

// envoyPid reads the pid `thaw local` wrote for its Envoy.
func envoyPid(dir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "state", "envoy.pid"))
	if err != nil {
		return 0, fmt.Errorf("envoy pid: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("envoy pid: %w", err)
	}
	return pid, nil
}

// largeMemory fills the memory figures of s.
func largeMemory(th *thaw, pid, epid int, s *results.Scale) error {
	var err error
	if s.ThawRSSMiB, err = procStatusMiB(pid, "VmRSS"); err != nil {
		return err
	}
	if s.ThawPeakRSSMiB, err = procStatusMiB(pid, "VmHWM"); err != nil {
		return err
	}
	if s.EnvoyRSSMiB, err = procStatusMiB(epid, "VmRSS"); err != nil {
		return err
	}
	m, err := scrape(th.adminURL + "/metrics")
	if err != nil {
		return err
	}
	s.HeapInuseMiB = m["go_memstats_heap_inuse_bytes"] / (1 << 20)
	s.StackInuseMiB = m["go_memstats_stack_inuse_bytes"] / (1 << 20)
	s.Goroutines = m["go_goroutines"]
	return nil
}

// waitRows is thaw.waitStatus for a large installation: the named
// revisions' rows (statusOf: a lookup each, where the whole /status walks
// every revision, ~1 s of thaw's CPU at 100k) every 250 ms, each answer
// within 30 s (a loaded machine).
func (th *thaw) waitRows(ctx context.Context, timeout time.Duration, what string, cond func(revStatus) bool, revs ...string) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := &http.Client{Timeout: 30 * time.Second}
	var last []revStatus
	for {
		rows, err := th.statusOf(ctx, c, revs...)
		if err == nil {
			last = last[:0]
			ok := true
			for _, r := range revs {
				row, found := rows["local/"+r]
				last = append(last, row)
				if !found || !cond(row) {
					ok = false
				}
			}
			if ok {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not reached within %s; last rows %+v (last error %v)", what, timeout, last, err)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// fetchBody returns the body of a GET of url, which must answer 200.
func fetchBody(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: %s %q", url, resp.Status, b[:min(len(b), 200)])
	}
	return b, err
}

// getHost returns the body of a GET of url with Host host, which must
// answer 200.
func getHost(ctx context.Context, url, host string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: %s %q", host, resp.Status, b)
	}
	return string(b), err
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
