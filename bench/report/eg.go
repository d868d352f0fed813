package main

import (
	"fmt"

	"github.com/thaw-dev/thaw/bench/results"
)

// egRows judges thaw as Envoy Gateway's extension: the warm path through
// EG's Envoy to a Revision against EG routing to the same backend process
// as a plain Backend (median of per-round ratios, ≤ 1.01), and the
// cold-start overhead through EG's Envoy against thaw's own fleet in the
// same run (the cold scenario's delay-0 figure; within 5 ms).
func egRows(g *results.EnvoyGateway, own []results.Cold) []row {
	if g == nil {
		return []row{{What: "Envoy Gateway extension: warm path and cold starts through EG's Envoy", Measured: "not run", Result: missing}}
	}
	pl, rv := g.Plain, g.Revision
	rounds := fmt.Sprintf("median of %d rounds", len(rv.RoundP50Ms))
	p50r, ok50 := results.MedianRatio(rv.RoundP50Ms, pl.RoundP50Ms)
	p99r, ok99 := results.MedianRatio(rv.RoundP99Ms, pl.RoundP99Ms)
	tr, okT := results.MedianRatio(rv.RoundThroughput, pl.RoundThroughput)
	rows := []row{
		{What: fmt.Sprintf("Envoy Gateway: warm path p50 latency, Revision / plain Backend through EG's Envoy (%d rps)", g.RateRPS),
			Measured: fmt.Sprintf("%.3f (%s; all requests: %.3f vs %.3f ms)", p50r, rounds, rv.Latency.P50Ms, pl.Latency.P50Ms),
			Target:   "≤ 1.01", Result: atMost(ok50, p50r, 1.01),
			Means: "what a warm request to a thaw Revision pays inside Envoy Gateway compared with EG's own routing (one Envoy hop either way)"},
		{What: fmt.Sprintf("Envoy Gateway: warm path p99 latency, Revision / plain Backend (%d rps)", g.RateRPS),
			Measured: fmt.Sprintf("%.3f (%s; all requests: %.3f vs %.3f ms)", p99r, rounds, rv.Latency.P99Ms, pl.Latency.P99Ms),
			Target:   "≤ 1.01", Result: atMost(ok99, p99r, 1.01),
			Means: "the same for the slowest 1%"},
		{What: fmt.Sprintf("Envoy Gateway: warm path throughput, Revision / plain Backend (%d in flight)", g.Concurrency),
			Measured: fmt.Sprintf("%.3f (median of %d rounds; %.0f vs %.0f req/s)", tr, len(rv.RoundThroughput), rv.ThroughputRPS, pl.ThroughputRPS),
			Target:   "≥ 0.95", Result: atLeast(okT, tr, 0.95),
			Means: "requests/s EG's Envoy passes to a warm Revision vs to a plain Backend"},
		warmCPURow(fmt.Sprintf("Envoy Gateway: warm path Envoy CPU per request, Revision / plain Backend (%d in flight)", g.Concurrency), rv, pl,
			"what thaw's cluster and route settings (least request, circuit breakers, retries, revision header) cost EG's Envoy per request"),
	}
	c := g.Cold
	measured := fmt.Sprintf("p50 %.1f ms, p99 %.1f ms (n=%d)", c.OverheadP50Ms, c.OverheadP99Ms, c.N)
	if c.Errors > 0 {
		measured += fmt.Sprintf(", %d failed", c.Errors)
	}
	var fleet *results.Cold
	for i := range own {
		if own[i].StartupDelayMs == 0 {
			fleet = &own[i]
		}
	}
	cold := row{What: "Envoy Gateway: cold-start overhead through EG's Envoy, vs thaw's own fleet in the same run (p50)",
		Measured: measured + "; own fleet not run", Target: "within 5 ms of the own fleet", Result: missing,
		Means: "a request to a Revision at zero behind EG waits the app's startup plus this"}
	if fleet != nil {
		d := c.OverheadP50Ms - fleet.OverheadP50Ms
		cold.Measured = fmt.Sprintf("%s; own fleet p50 %.1f ms: %+.1f ms", measured, fleet.OverheadP50Ms, d)
		cold.Result = atMost(c.N > 0 && fleet.N > 0, d, 5)
	}
	if c.Errors > 0 {
		cold.Result = fail
	}
	rows = append(rows, cold)
	if g.AddedRevisions > 0 {
		per := float64(g.EnvoyRSSAfterBytes-g.EnvoyRSSBeforeBytes) / 1024 / float64(g.AddedRevisions)
		rows = append(rows, row{
			What: fmt.Sprintf("Envoy Gateway: EG's Envoy memory per Revision (%d added at once, one EDS stream each)", g.AddedRevisions),
			Measured: fmt.Sprintf("%.1f KiB (RSS %.0f → %.0f MiB); every new cluster warm %s after the resources changed, of which thaw spent %.3f s answering %d hook calls",
				per, float64(g.EnvoyRSSBeforeBytes)/(1<<20), float64(g.EnvoyRSSAfterBytes)/(1<<20), fmtMs(g.AddedReadyMs), g.AddedHookSeconds, g.AddedHookCalls),
			Target: "reported", Result: info,
			Means: "what each Revision costs every EG Envoy replica (cluster, EDS stream, stats), and how soon EG, thaw's hooks and EDS take a large change"})
	}
	return rows
}
