package main

import (
	"fmt"

	"github.com/thaw-dev/thaw/bench/results"
)

// moduleRows judge the activator module's sides of the paths scenario
// against serve mode of the same run (issue 31's targets), and set them
// beside the ext_proc proxy side. None when the module sides did not run.
func moduleRows(p *results.Paths) []row {
	if p == nil || p.Module == nil || p.ServeWithModule == nil {
		return nil
	}
	md, sm, sv, px := *p.Module, *p.ServeWithModule, p.Serve, p.Proxy
	rounds := fmt.Sprintf("median of %d rounds", len(md.RoundP50Ms))
	add50, ok50 := results.MedianDiff(md.RoundP50Ms, sm.RoundP50Ms)
	add99, ok99 := results.MedianDiff(md.RoundP99Ms, sm.RoundP99Ms)
	tr, okT := results.MedianRatio(md.RoundThroughput, sv.RoundThroughput)
	tRounds := fmt.Sprintf("median of %d rounds", len(md.RoundThroughput))
	rows := []row{
		moduleCPURow(fmt.Sprintf("module path: Envoy CPU per request, module / serve mode (container concurrency 0, %d in flight)", p.Concurrency), md, sv,
			"what the activator module costs Envoy per request when nothing is held (target-burst-capacity -1 keeps it in the path), against routing straight to the backend"),
	}
	if p.ModuleCC4 != nil {
		rows = append(rows, moduleCPURow(fmt.Sprintf("module path: Envoy CPU per request, module / serve mode (container concurrency 4, %d in flight)", p.Concurrency), *p.ModuleCC4, sv,
			"the same with a limit of 4 per backend: at this concurrency most requests are held for a slot and resumed by the module"))
	}
	rows = append(rows, limitRows(p)...)
	rows = append(rows,
		row{What: fmt.Sprintf("module path throughput, module / serve mode (container concurrency 0, %d in flight)", p.Concurrency),
			Measured: fmt.Sprintf("%.3f (%s; mean %.0f vs %.0f req/s)", tr, tRounds, md.ThroughputRPS, sv.ThroughputRPS),
			Target:   "≥ 0.85", Result: atLeast(okT, tr, 0.85),
			Means: "requests/s one Envoy passes through the module compared with direct routing"},
		row{What: fmt.Sprintf("module path: added p50 latency, module − serve mode (%d rps)", p.RateRPS),
			Measured: fmt.Sprintf("%+.3f ms (%s; all requests: %.3f vs %.3f ms)", add50, rounds, md.Latency.P50Ms, sm.Latency.P50Ms),
			Target:   "≤ +0.05 ms", Result: atMost(ok50, add50, 0.05),
			Means: "extra latency per request with the module in the path (latency needs a quiet machine)"},
		row{What: fmt.Sprintf("module path: added p99 latency, module − serve mode (%d rps)", p.RateRPS),
			Measured: fmt.Sprintf("%+.3f ms (%s; all requests: %.3f vs %.3f ms)", add99, rounds, md.Latency.P99Ms, sm.Latency.P99Ms),
			Target:   "≤ +0.5 ms", Result: atMost(ok99, add99, 0.5),
			Means: "the same for the slowest 1%"},
		row{What: fmt.Sprintf("module path: thaw CPU per request (%d in flight)", p.Concurrency),
			Measured: cpuCell(md.ThawCPUUsPerRequest, md.CPURequests, "thaw only sees state changes and one report per second"),
			Target:   "≤ 2 µs", Result: atMost(md.CPURequests > 0, md.ThawCPUUsPerRequest, 2),
			Means: "CPU the thaw process spends per module-path request (user + system time from /proc over the closed-loop rounds)"},
		row{What: fmt.Sprintf("module path vs ext_proc proxy: Envoy CPU per request (%d in flight)", p.Concurrency),
			Measured: cpuCell(md.EnvoyCPUUsPerRequest, md.CPURequests, fmt.Sprintf("ext_proc proxy %.1f µs + thaw %.1f µs",
				px.EnvoyCPUUsPerRequest, px.ThawCPUUsPerRequest)),
			Target: "reported", Result: map[bool]string{true: info, false: missing}[md.CPURequests > 0 && px.CPURequests > 0],
			Means: "the same warm request through the module instead of the ext_proc activator"},
	)
	return rows
}

// moduleCPURow judges a module side's Envoy CPU per request against serve
// mode's: the median over closed-loop rounds of the per-round ratio, at
// most 1.15 (issue 31).
func moduleCPURow(what string, side, base results.Side, means string) row {
	r, ok := results.EnvoyCPURatio(side, base)
	measured := "not measured"
	if ok && side.CPURequests > 0 {
		measured = fmt.Sprintf("%.3f (median of %d rounds; pooled %.1f vs %.1f µs per request; %d requests)", r, len(side.RoundEnvoyCPUUs),
			side.EnvoyCPUUsPerRequest, base.EnvoyCPUUsPerRequest, side.CPURequests)
	}
	return row{What: what, Measured: measured, Target: "≤ 1.15", Result: atMost(ok && side.CPURequests > 0, r, 1.15), Means: means}
}
