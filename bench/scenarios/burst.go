package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/thaw-dev/thaw/bench/results"
)

// burstCC is the container concurrency of the 1000-request burst: 1000
// requests against a revision at zero whose backends take 200 ms to start,
// 100 ms per request and at most 50 requests at once, so 20 backends are
// needed to serve the burst at once.
const burstCC = 50

// burstCCs are the container concurrencies the large burst runs at: 0
// (the default: no limit, every held request is released to the first
// ready backend at once) and 50 (releases paced by free slots).
var burstCCs = []int{0, burstCC}

// parseCCs parses -burst-ccs: comma-separated container concurrencies
// (each >= 0), at least one.
func parseCCs(v string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q: want container concurrencies >= 0, comma-separated", v)
		}
		out = append(out, n)
	}
	return out, nil
}

// burstRevAt is the revision the 1000-request burst wakes, with container
// concurrency cc (0: none).
func burstRevAt(cc int) rev {
	return rev{name: "burst", startupDelay: 200 * time.Millisecond, latency: 100 * time.Millisecond,
		autoscaling: map[string]string{"initial-scale": "0", "container-concurrency": strconv.Itoa(cc), "max-scale": "20"}}
}

// burstLargeStartup is how long the large burst's backends take to start:
// long enough that the whole burst is held when the first one is ready,
// even when a loaded machine's Envoy needs seconds to accept 10,000
// connections, so every held request is released at once.
var burstLargeStartup = 10 * time.Second

// burstLargeRevAt is the revision the 10,000-request bursts wake:
// burstLargeStartup, 50 ms per request, at most 10 backends (issue 25 lost
// 31-48% of the requests with these settings and a 3 s start on a quiet
// machine, at container concurrency 0).
func burstLargeRevAt(cc int) rev {
	return rev{name: "burst", startupDelay: burstLargeStartup, latency: 50 * time.Millisecond,
		autoscaling: map[string]string{"initial-scale": "0", "container-concurrency": strconv.Itoa(cc), "max-scale": "10"}}
}

const burstSampleEvery = 50 * time.Millisecond

// burstLargeRuns is how many times the 10,000-request burst is repeated at
// each container concurrency, each against a fresh thaw (a revision at
// zero); -burst-runs changes it.
const burstLargeRuns = 5

// runBurstLarge repeats a burst of n requests at zero e.burstRuns times at
// each of burstCCs (issue: bursts up to the queue depth lose nothing, at
// any container concurrency). A failed run is recorded with its error and
// the next one still runs.
func runBurstLarge(e *env, n int) ([]results.Burst, error) {
	var out []results.Burst
	var errs []error
	for _, cc := range burstCCs {
		for i := range e.burstRuns {
			b, err := runBurst(e, n, burstLargeRevAt(cc), fmt.Sprintf("burst%d-cc%d-%d", n, cc, i+1))
			if err != nil {
				errs = append(errs, fmt.Errorf("cc %d run %d: %w", cc, i+1, err))
				continue
			}
			b.Samples = nil // the timeline is pictured for the 1000-request burst only
			out = append(out, *b)
		}
	}
	return out, errors.Join(errs...)
}

// runBurst sends n requests at once to burstRev at zero and samples thaw's /status (held, in flight, desired,
// ready) every 50 ms, and the resident memory of thaw and its Envoy before
// and at their peak.
func runBurst(e *env, n int, burstRev rev, name string) (*results.Burst, error) {
	dir, err := e.tempDir(name)
	if err != nil {
		return nil, err
	}
	cc, _ := strconv.Atoi(burstRev.autoscaling["container-concurrency"])
	var extra []string
	if e.envoyFiles > 0 {
		extra = []string{"--envoy-open-files", strconv.Itoa(e.envoyFiles)}
	}
	th, err := startThawArgs(e.ctx, e, dir, localConfig(e.workloadBin, burstRev), extra...)
	if err != nil {
		return nil, err
	}
	defer e.stopLogged(th.process)
	if err := th.waitStatus(e.ctx, 10*time.Second, "at zero", func(r revStatus) bool {
		return r.Ready == 0 && r.Mode == "proxy"
	}, burstRev.name); err != nil {
		return nil, err
	}
	mem, err := startMemory(th.process.Pid())
	if err != nil {
		return nil, err
	}
	b := &results.Burst{Requests: n, SampleEveryMs: results.Millis(burstSampleEvery),
		Settings: fmt.Sprintf("example workload (startup delay %s, %s per request), autoscaling: %s; everything else default (target = container-concurrency, 70%% utilization, tick 2 s)",
			burstRev.startupDelay, burstRev.latency, settingsString(burstRev.autoscaling)),
		Short: fmt.Sprintf("backend starts in %s and takes %s per request; container-concurrency %d, max-scale %s",
			burstRev.startupDelay, burstRev.latency, cc, burstRev.autoscaling["max-scale"])}
	t := newTarget("burst", th.httpURL, burstRev.host(), n)

	// Sample from 300 ms before the burst until 2 s after its last
	// response (bounded: at most 2 minutes of samples).
	start := time.Now().Add(300 * time.Millisecond)
	var (
		mu      sync.Mutex
		samples []results.BurstSample
	)
	sctx, stopSampling := context.WithTimeout(e.ctx, 2*time.Minute)
	defer stopSampling()
	var wg sync.WaitGroup
	wg.Go(func() {
		c := &http.Client{Timeout: time.Second}
		tick := time.NewTicker(burstSampleEvery)
		defer tick.Stop()
		for sctx.Err() == nil {
			at := time.Now()
			rows, err := th.statusOf(sctx, c, burstRev.name)
			if err == nil {
				r := rows["local/"+burstRev.name]
				mu.Lock()
				samples = append(samples, results.BurstSample{TMs: results.Millis(at.Sub(start)),
					Held: r.Held, InFlight: r.InFlight, Desired: r.Desired, Ready: r.Ready})
				mu.Unlock()
			}
			select {
			case <-sctx.Done():
				return
			case <-tick.C:
			}
		}
	})
	time.Sleep(time.Until(start))
	e.logf("burst: %d requests at once", n)
	res := burst(t, n)
	var last time.Time
	first := time.Time{}
	var lats []float64
	ends := make([]float64, 0, len(res))
	errs := map[string]int{}
	for _, r := range res {
		end := r.End()
		if r.Error != "" || r.Code != http.StatusOK {
			b.Errors++
			errs[fmt.Sprintf("%d %s", r.Code, r.Error)]++
			continue
		}
		if end.After(last) {
			last = end
		}
		if first.IsZero() || end.Before(first) {
			first = end
		}
		lats = append(lats, results.Millis(r.Latency))
		ends = append(ends, results.Millis(end.Sub(start)))
	}
	b.Errors += n - len(res)
	for k, v := range errs {
		if len(b.ErrorSamples) < 10 {
			b.ErrorSamples = append(b.ErrorSamples, fmt.Sprintf("%dx %s", v, strings.TrimSpace(k)))
		}
	}
	if !last.IsZero() {
		b.AllServedMs, b.FirstServedMs = results.Millis(last.Sub(start)), results.Millis(first.Sub(start))
	}
	b.LatencyP50Ms, b.LatencyP99Ms = results.Quantile(lats, 0.5), results.Quantile(lats, 0.99)
	b.Memory = mem.stop()
	b.BackendMaxInFlight, b.ContainerConcurrency = backendMaxInFlight(e, th, burstRev.name, burstRev.host()), cc
	time.Sleep(2 * time.Second)
	if st, err := th.envoyStats(e.ctx, `ext_proc|thaw_activator|rq_timeout|downstream_rq_5xx|outlier_detection|upstream_rq_retry|lb_healthy_panic|upstream_rq_5xx|upstream_cx_connect_fail|upstream_cx_overflow|upstream_cx_total|upstream_rq_pending|thaw_extproc`); err == nil {
		b.EnvoyStats = st
	} else {
		e.logf("burst: envoy stats: %v", err)
	}
	stopSampling()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()

	slices.Sort(ends)
	b.Samples = samples
	b.TimeToDesiredMs, b.TimeToReadyMs = -1, -1
	for i := range b.Samples {
		s := &b.Samples[i]
		s.Served, _ = slices.BinarySearch(ends, s.TMs)
		b.DesiredMax = max(b.DesiredMax, s.Desired)
		b.MaxHeld = max(b.MaxHeld, s.Held)
	}
	for _, s := range b.Samples {
		if s.TMs >= 0 && b.TimeToDesiredMs < 0 && s.Desired == b.DesiredMax {
			b.TimeToDesiredMs = s.TMs
		}
		if s.TMs >= 0 && b.TimeToReadyMs < 0 && b.DesiredMax > 0 && s.Ready >= b.DesiredMax {
			b.TimeToReadyMs = s.TMs
		}
	}
	e.logf("burst: most requests at one backend at once: %d (container-concurrency %d)", b.BackendMaxInFlight, b.ContainerConcurrency)
	e.logf("burst: %d errors %v; first served %.0f ms, all served %.0f ms; desired %d at %.0f ms, ready at %.0f ms; max held %d; %d samples",
		b.Errors, b.ErrorSamples, b.FirstServedMs, b.AllServedMs, b.DesiredMax, b.TimeToDesiredMs, b.TimeToReadyMs, b.MaxHeld, len(b.Samples))
	if b.Errors > 0 {
		e.logf("burst: envoy stats %v", b.EnvoyStats)
	}
	return b, nil
}

// backendMaxInFlight returns the most requests any backend of the revision
// had at once: read from every backend directly (backendPeaks), or, when
// that fails, through Envoy (40 requests on fresh connections, so they
// spread over the backends).
func backendMaxInFlight(e *env, th *thaw, name, host string) int {
	most := 0
	peaks, err := backendPeaks(e.ctx, th, name)
	if err == nil {
		for _, p := range peaks {
			most = max(most, int(p))
		}
		e.logf("burst: most requests at once per backend: %v", peaks)
		return most
	}
	e.logf("burst: backend peaks: %v; asking through Envoy", err)
	for range 40 {
		c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		ws, err := fetchStats(e.ctx, c, th.httpURL, host)
		if err != nil {
			e.logf("burst: backend stats: %v", err)
			continue
		}
		most = max(most, int(ws.MaxInflight))
	}
	return most
}

// settingsString prints autoscaling settings sorted, "key: value, ...".
func settingsString(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + m[k]
	}
	return strings.Join(parts, ", ")
}
