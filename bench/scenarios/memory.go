package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/thaw-dev/thaw/bench/results"
)

// memorySampleEvery is how often memoryMeter reads VmRSS.
const memorySampleEvery = 25 * time.Millisecond

// rssBytes returns the resident set size of pid (VmRSS of /proc/<pid>/status).
func rssBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("rss of %d: %w", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) < 1 {
				break
			}
			kib, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("rss of %d: %w", pid, err)
			}
			return kib << 10, nil
		}
	}
	return 0, fmt.Errorf("rss of %d: no VmRSS", pid)
}

// memoryMeter samples the resident memory of thaw and its Envoy child
// every memorySampleEvery until stop, keeping the first reading and the
// peak of each.
type memoryMeter struct {
	thaw, envoy int
	stopc       chan struct{}
	wg          sync.WaitGroup
	mu          sync.Mutex
	out         results.BurstMemory
}

// startMemory starts sampling thaw (pid) and the envoy process it started.
func startMemory(thawPid int) (*memoryMeter, error) {
	envoy, err := childNamed(thawPid, "envoy")
	if err != nil {
		return nil, err
	}
	m := &memoryMeter{thaw: thawPid, envoy: envoy, stopc: make(chan struct{})}
	m.sample(true)
	m.wg.Go(func() {
		tick := time.NewTicker(memorySampleEvery)
		defer tick.Stop()
		for {
			select {
			case <-m.stopc:
				return
			case <-tick.C:
				m.sample(false)
			}
		}
	})
	return m, nil
}

func (m *memoryMeter) sample(first bool) {
	t, err1 := rssBytes(m.thaw)
	en, err2 := rssBytes(m.envoy)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err1 == nil {
		if first {
			m.out.ThawBeforeMiB = mib(t)
		}
		m.out.ThawPeakMiB = max(m.out.ThawPeakMiB, mib(t))
	}
	if err2 == nil {
		if first {
			m.out.EnvoyBeforeMiB = mib(en)
		}
		m.out.EnvoyPeakMiB = max(m.out.EnvoyPeakMiB, mib(en))
	}
}

// stop ends sampling and returns the readings.
func (m *memoryMeter) stop() results.BurstMemory {
	close(m.stopc)
	m.wg.Wait()
	m.sample(false)
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.out
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
