package main

import (
	"sync"
	"time"

	"github.com/thaw-dev/thaw/bench/results"
	"github.com/thaw-dev/thaw/e2e/harness"
)

// memorySampleEvery is how often memoryMeter reads VmRSS.
const memorySampleEvery = 25 * time.Millisecond

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
	t, err1 := harness.RSS(m.thaw)
	en, err2 := harness.RSS(m.envoy)
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
