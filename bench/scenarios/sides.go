package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/thaw-dev/thaw/bench/results"
)

// sideResult is one side of compareSides, as written to <name>.json.
type sideResult struct {
	Side                   string
	P50Ms, P99Ms           float64
	RoundP50Ms, RoundP99Ms []float64
	ThroughputRPS          []float64
	// ThawCPUUs and EnvoyCPUUs are µs of CPU (user + system, from /proc)
	// per request served in the closed-loop rounds.
	ThawCPUUs, EnvoyCPUUs float64
	// RoundEnvoyCPUUs is EnvoyCPUUs per closed-loop round;
	// EnvoyCPURatio is the median over rounds of this side's figure over
	// the first side's (the baseline) in the same round.
	RoundEnvoyCPUUs []float64
	EnvoyCPURatio   float64
	Errors          int
}

// compareSides measures sides that one static Envoy (pid envoyPid) serves,
// each at baseOf(side) under the Host "<side>.bench": latency at e.rate (10 rounds
// of 2 s, sides back to back, order rotating), then throughput with 16 in
// flight (6 rounds) with the CPU that thawPid and envoyPid used per
// request. The figures go to the log (prefixed with name) and to
// <outDir>/<name>.json. thawPid 0 means no thaw process to meter.
func compareSides(e *env, name, outDir string, baseOf func(string) string, names []string, thawPid, envoyPid int) error {
	return compareSidesAt(e, name, outDir, func(s string) (string, int) { return baseOf(s), envoyPid }, names, thawPid, sideRounds{})
}

// sideRounds sizes compareSidesAt; zero fields take the defaults (10
// latency rounds, 6 closed-loop rounds; -quick 2 and 1).
type sideRounds struct{ latency, throughput int }

// compareSidesAt is compareSides where each side may be served by an Envoy
// of its own: at(side) gives the side's base URL and the pid of the Envoy
// whose CPU it is charged.
func compareSidesAt(e *env, name, outDir string, at func(string) (string, int), names []string, thawPid int, sr sideRounds) error {
	type side struct {
		envoyPid  int
		t         *target
		lat       sample
		p50, p99  []float64
		tput      []float64
		cpu       []float64
		thaw, env time.Duration
		n         float64
	}
	sides := make([]*side, len(names))
	for i, n := range names {
		u, pid := at(n)
		sides[i] = &side{t: newTarget(n, u, n+".bench", 256), envoyPid: pid}
		pairedRate(sides[i].t, sides[i].t, 100, time.Second, nil, nil) // warm-up
	}
	rounds, roundDur, tRounds := 10, 2*time.Second, 6
	if e.quick {
		rounds, tRounds = 2, 1
	}
	if sr.latency > 0 {
		rounds = sr.latency
	}
	if sr.throughput > 0 {
		tRounds = sr.throughput
	}
	for r := range rounds {
		for i := range sides {
			sd := sides[(i+r)%len(sides)]
			var s sample
			constantRate(sd.t, e.rate, roundDur, &s)
			l := s.latency()
			sd.p50, sd.p99 = append(sd.p50, l.P50Ms), append(sd.p99, l.P99Ms)
			sd.lat.merge(&s)
			e.logf("%s: round %d %-9s p50 %.3f p99 %.3f ms (%d requests, %d errors)", name, r+1, sd.t.name, l.P50Ms, l.P99Ms, l.Requests, l.Errors)
		}
	}
	for r := range tRounds {
		for i := range sides {
			sd := sides[(i+r)%len(sides)]
			pids := []int{sd.envoyPid}
			if thawPid != 0 {
				pids = append(pids, thawPid)
			}
			m := startCPU(pids...)
			rps, errs := closedLoop(sd.t, 16, roundDur)
			used := m.stop()
			var thawUsed time.Duration
			if thawPid != 0 {
				thawUsed = used[1]
			}
			sd.env += used[0]
			sd.thaw += thawUsed
			sd.n += rps * roundDur.Seconds()
			sd.tput = append(sd.tput, rps)
			if n := rps * roundDur.Seconds(); n > 0 {
				sd.cpu = append(sd.cpu, float64(used[0].Microseconds())/n)
			}
			e.logf("%s: throughput round %d %-9s %.0f req/s (%d errors), CPU envoy %v thaw %v", name, r+1, sd.t.name, rps, errs, used[0], thawUsed)
		}
	}
	var all []sideResult
	for _, sd := range sides {
		l := sd.lat.latency()
		o := sideResult{Side: sd.t.name, P50Ms: l.P50Ms, P99Ms: l.P99Ms, RoundP50Ms: sd.p50, RoundP99Ms: sd.p99,
			ThroughputRPS: sd.tput, Errors: l.Errors, RoundEnvoyCPUUs: sd.cpu}
		o.EnvoyCPURatio, _ = results.MedianRatio(sd.cpu, sides[0].cpu)
		if sd.n > 0 {
			o.ThawCPUUs, o.EnvoyCPUUs = float64(sd.thaw.Microseconds())/sd.n, float64(sd.env.Microseconds())/sd.n
		}
		e.logf("%s: %-9s p50 %.3f p99 %.3f ms (%d errors); throughput %v; CPU per request thaw %.1f µs, envoy %.1f µs (%.3f of %s, median of rounds)",
			name, o.Side, o.P50Ms, o.P99Ms, o.Errors, o.ThroughputRPS, o.ThawCPUUs, o.EnvoyCPUUs, o.EnvoyCPURatio, sides[0].t.name)
		all = append(all, o)
	}
	b, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(outDir, name+".json"), b, 0o644)
}

// startOneBackend starts thaw local with the single revision r (whose
// autoscaling keeps one backend), waits until it is in mode with that
// backend ready, and returns thaw and the backend's port. The caller stops
// thaw.
func startOneBackend(e *env, dir string, r rev, mode string) (*thaw, int, error) {
	th, err := startThaw(e.ctx, e, dir, localConfig(e.workloadBin, r))
	if err != nil {
		return nil, 0, err
	}
	fail := func(err error) (*thaw, int, error) {
		e.stopLogged(th.process)
		return nil, 0, err
	}
	if err := th.waitStatus(e.ctx, 30*time.Second, mode+" mode, 1 ready", func(rs revStatus) bool {
		return rs.Mode == mode && rs.Ready == 1
	}, r.name); err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	ws, err := fetchStats(ctx, &http.Client{Timeout: 5 * time.Second}, th.httpURL, r.host())
	if err != nil {
		return fail(err)
	}
	return th, ws.Port, nil
}
