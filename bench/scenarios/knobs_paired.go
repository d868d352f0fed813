package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/thaw-dev/thaw/bench/results"
)

// pairedSide is one side of pairedCPU against the baseline, as written to
// <name>.json.
type pairedSide struct {
	Side string
	// EnvoyCPUUs and BaseCPUUs are µs of Envoy CPU (user + system, from
	// /proc) per request, pooled over the rounds: the side's Envoy and the
	// baseline's in the same windows.
	EnvoyCPUUs, BaseCPUUs float64
	// RoundCPURatios are the side's figure over the baseline's, per round;
	// CPURatio is their median.
	RoundCPURatios []float64
	CPURatio       float64
	Requests       int64
	Errors         int
}

// pairedCPU compares each side with base where only Envoy CPU per request
// is trustworthy (a loaded, shared machine): every side is served by an
// Envoy process of its own (at(side) gives its URL and pid), and in each of
// rounds rounds every side and base share one constant-rate attack whose
// requests alternate between them (pairedRate, rate requests/s each, 3 s),
// so both Envoys see the same request rate, arrival pattern and
// background load. Each Envoy's CPU over that window (/proc schedstat, ns)
// is divided by the requests it answered. A closed loop per side would let
// a side that the scheduler slowed down batch fewer requests per wake-up,
// which raises its CPU per request for reasons that are not its
// configuration's. The figures go to the log and <outDir>/<name>.json.
func pairedCPU(e *env, name, outDir, base string, sides []string, at func(string) (string, int), rounds, rate int) ([]pairedSide, error) {
	const d = 3 * time.Second
	bu, bpid := at(base)
	bt := newTarget(base, bu, base+".bench", 256)
	type acc struct {
		t            *target
		pid          int
		cpu, baseCPU time.Duration
		n, baseN     float64
		ratios       []float64
		errs         int
	}
	all := make([]*acc, len(sides))
	for i, s := range sides {
		u, pid := at(s)
		all[i] = &acc{t: newTarget(s, u, s+".bench", 256), pid: pid}
		pairedRate(bt, all[i].t, 100, time.Second, nil, nil) // warm-up
	}
	e.logf("%s: %d rounds; each side and %s in one attack alternating between them, %d requests/s each, %s", name, rounds, base, rate, d)
	for r := range rounds {
		for i := range all {
			a := all[(i+r)%len(all)]
			var sb, ss sample
			m := startCPU(bpid, a.pid)
			pairedRate(bt, a.t, rate, d, &sb, &ss)
			used := m.stop()
			lb, ls := sb.latency(), ss.latency()
			bn, n := float64(lb.Requests-lb.Errors), float64(ls.Requests-ls.Errors)
			a.baseCPU += used[0]
			a.cpu += used[1]
			a.baseN += bn
			a.n += n
			a.errs += lb.Errors + ls.Errors
			if bn > 0 && n > 0 && used[0] > 0 && used[1] > 0 {
				a.ratios = append(a.ratios, (float64(used[1])/n)/(float64(used[0])/bn))
			}
			e.logf("%s: round %d %-9s %.0f requests, Envoy %v, p50 %.3f ms | %s %.0f requests, Envoy %v, p50 %.3f ms (%d errors)",
				name, r+1, a.t.name, n, used[1].Round(time.Millisecond), ls.P50Ms, base, bn, used[0].Round(time.Millisecond), lb.P50Ms, lb.Errors+ls.Errors)
		}
		if err := e.ctx.Err(); err != nil {
			return nil, err
		}
	}
	out := make([]pairedSide, 0, len(all))
	for _, a := range all {
		p := pairedSide{Side: a.t.name, RoundCPURatios: a.ratios, CPURatio: results.Quantile(slices.Clone(a.ratios), 0.5),
			Requests: int64(a.n), Errors: a.errs}
		if a.n > 0 && a.baseN > 0 {
			p.EnvoyCPUUs, p.BaseCPUUs = float64(a.cpu.Microseconds())/a.n, float64(a.baseCPU.Microseconds())/a.baseN
		}
		e.logf("%s: %-9s Envoy CPU per request %.3f of %s (median of %d rounds; pooled %.1f vs %.1f µs), %d errors",
			name, p.Side, p.CPURatio, base, len(p.RoundCPURatios), p.EnvoyCPUUs, p.BaseCPUUs, p.Errors)
		out = append(out, p)
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return out, err
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return out, err
	}
	return out, os.WriteFile(filepath.Join(outDir, name+".json"), b, 0o644)
}
