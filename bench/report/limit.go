package main

import (
	"fmt"

	"github.com/thaw-dev/thaw/bench/results"
)

// limitRows set the module's container-concurrency-4 side beside its
// like-for-like baseline, a static Envoy with Envoy's own limit of 4
// (results.Paths.StaticLimit4): the throughput of the cc 4 side against
// serve mode (issue 31's target), what the limit itself costs a plain
// Envoy, and what the module adds to it. None without both sides.
func limitRows(p *results.Paths) []row {
	if p.ModuleCC4 == nil {
		return nil
	}
	m4 := *p.ModuleCC4
	tr, okT := results.MedianRatio(m4.RoundThroughput, p.Serve.RoundThroughput)
	rows := []row{{What: fmt.Sprintf("module path throughput with a limit of 4 per backend, module / serve mode (%d in flight)", p.Concurrency),
		Measured: fmt.Sprintf("%.3f (median of %d rounds; mean %.0f vs %.0f req/s)", tr, len(m4.RoundThroughput), m4.ThroughputRPS, p.Serve.ThroughputRPS),
		Target:   "≥ 0.85", Result: atLeast(okT, tr, 0.85),
		Means: "the backend takes 4 at once from the module side and all 16 from serve mode; see Envoy's own limit of 4 below for what any limit of 4 gives"}}
	if p.StaticLimit4 == nil {
		return rows
	}
	l4 := *p.StaticLimit4
	limitCPU, okL := results.EnvoyCPURatio(l4, p.Static)
	limitT, okLT := results.MedianRatio(l4.RoundThroughput, p.Static.RoundThroughput)
	modCPU, okM := results.EnvoyCPURatio(m4, l4)
	modT, okMT := results.MedianRatio(m4.RoundThroughput, l4.RoundThroughput)
	reported := func(ok bool) string { return map[bool]string{true: info, false: missing}[ok] }
	return append(rows,
		row{What: fmt.Sprintf("Envoy's own limit of 4 / static Envoy (no module, %d in flight)", p.Concurrency),
			Measured: fmt.Sprintf("Envoy CPU %.3f, throughput %.3f (medians of %d rounds; %.1f vs %.1f µs per request)", limitCPU, limitT,
				len(l4.RoundEnvoyCPUUs), l4.EnvoyCPUUsPerRequest, p.Static.EnvoyCPUUsPerRequest),
			Target: "reported", Result: reported(okL && okLT),
			Means: "what a limit of 4 kept inside Envoy costs at all (its connection pool queues the rest), the share of the cc 4 ratio no activator can remove"},
		row{What: fmt.Sprintf("module path (container concurrency 4) / Envoy's own limit of 4 (%d in flight)", p.Concurrency),
			Measured: fmt.Sprintf("Envoy CPU %.3f, throughput %.3f (medians of %d rounds)", modCPU, modT, len(m4.RoundEnvoyCPUUs)),
			Target:   "reported", Result: reported(okM && okMT),
			Means: "what the module's hold and resume add to the same limit (thaw's serve-mode Envoy over a static one included)"},
	)
}
